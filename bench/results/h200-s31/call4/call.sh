#!/usr/bin/env bash
# Session 31, call 4: the image matvecs' (o, down) block stacking (call 3's timeline: llama-8b
# q4_0 down, 251 of 256 blocks on SMs holding 3). Build: the landed kernels +
# results/h200-s31/img-launch-knobs.diff (CMF_CUDA_SERIAL=o,down: launch apart, no PDL;
# CMF_CUDA_IMG_PER_SM=2: dynamic shared memory so at most 2 blocks an SM).
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_SERIAL=down CMF_CUDA_IMG_PER_SM=2 CMF_CUDA_SERIAL=o,down" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
