#!/usr/bin/env bash
# Session 45, call 4 (call 3's machine, warm): CORTIQ_X_RF_ROWS on llama-1b q4_0 / q8_0.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-1b:q8_0
wait
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_DEFINES=CORTIQ_X_RF_ROWS" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((170-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
(cd $OUT && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
