#!/usr/bin/env bash
# Session 13 call 2: wgpu decode A/B, main 32027fb vs s12-wgpu-ahead (device embedding + greedy tokens queued ahead), tg128 after a 64-token prompt, alternating, same call.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-main cortiq-ahead; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq-main synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done; wait
BINS="./cortiq-main ./cortiq-ahead" BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=300 bash bench/ab.sh $OUT/ab-tg128 smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
cat $OUT/ab-tg128/ab.md
