#!/usr/bin/env bash
# Session 45, call 3: call 2's release before the wait, by kernel class (CMF_CUDA_DEFINES
# CORTIQ_X_RF_ROWS: the row kernels but the fused FFN; _ATT: the decode attention kernels;
# _FFN: the fused FFN), alternating against the landed order, tg128 after -p 512: which class
# gave llama-8b its +1.5 % and which smollm2 its -9 %.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-8b:q4_0 smollm2-135m:q4_0
CMF_GPU=cuda CMF_CUDA_DEFINES=CORTIQ_X_RF_ROWS ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_DEFINES=CORTIQ_X_RF_ROWS CMF_CUDA_DEFINES=CORTIQ_X_RF_ATT CMF_CUDA_DEFINES=CORTIQ_X_RF_FFN" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-8b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
(cd $OUT && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
