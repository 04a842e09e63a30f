#!/usr/bin/env bash
# Session 40, call 2: call 1's winner (CORTIQ_X_EVICT_FIRST: the weight ring's copies evict
# first from L2) on the other models, and the token graph's parity with it (copy hints only:
# the values must not move).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q8_0 llama-8b:q8_0 llama-1b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CMF_CUDA_DEFINES=CORTIQ_X_EVICT_FIRST timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity.log | head -6; grep -E "graph vs CPU" $OUT/parity.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_DEFINES=CORTIQ_X_EVICT_FIRST" \
  BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q8_0 llama-8b:q8_0 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
