#!/usr/bin/env bash
# Session 45, call 1: the row kernels' grids capped at k blocks an SM (CMF_X_PER_SM, one
# binary), so the next kernel's blocks fit beside them and enter early; alternating against
# the landed grids on llama-1b and llama-8b q4_0 after -p 512, smollm2 q4_0 on qkv / o; then
# the block timeline of llama-1b with o at one block an SM.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_X_PER_SM=o1 CMF_X_PER_SM=down1 CMF_X_PER_SM=o1,down1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
echo "ab done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_X_PER_SM=o1 CMF_X_PER_SM=qkv1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((450-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/small smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/small/ab.md
echo "ab small done at $((SECONDS-start)) s"
CMF_X_PER_SM=o1 CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout $((570-(SECONDS-start))) bash bench/timeline.sh $OUT/tl-o1 llama-1b:q4_0 > $OUT/timeline-o1.md 2>&1
head -40 $OUT/timeline-o1.md
(cd $OUT && tar czf ab.tgz ab && rm -rf ab && rm -f tl-*/trace-* ; tar czf tl.tgz tl-* && rm -rf tl-*)
echo "end at $((SECONDS-start)) s"
