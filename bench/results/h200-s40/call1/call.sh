#!/usr/bin/env bash
# Session 40, call 1: L2 hints on the weight ring's copies (one binary, CMF_CUDA_DEFINES):
# CORTIQ_X_EVICT_FIRST (the weights' lines evict first, so K / V rows, activations and norm
# weights stay in L2), CORTIQ_X_L2_256B (256-byte L2 prefetch on the payload copies), both.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_DEFINES=CORTIQ_X_EVICT_FIRST CMF_CUDA_DEFINES=CORTIQ_X_L2_256B CMF_CUDA_DEFINES=CORTIQ_X_EVICT_FIRST,CORTIQ_X_L2_256B" \
  BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
grep -c "run 1/1" $OUT/ab/ab.log
echo "end at $((SECONDS-start)) s"
