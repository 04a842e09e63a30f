#!/usr/bin/env bash
# Session 57, call 3 (the same H100): smollm2 q4_0 through CUDA, the same bench as call 2's
# wgpu run, for the ratio on one card. The command as run:
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0; CMF_GPU=cuda timeout 50 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda > $OUT/cuda-bench.txt 2>&1; echo "rc $?"; grep -E "pp512|tg128|rror" $OUT/cuda-bench.txt | head -5; echo "end at $((SECONDS-start)) s"
# Output: pp512 146777.4, tg128 2268.1 tok/s.
