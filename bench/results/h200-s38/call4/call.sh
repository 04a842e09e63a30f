#!/usr/bin/env bash
# Session 38, call 4: the build that fuses the FFN where a layer's adds are few (smollm2 here,
# `ffn::MAX_ADDS`): README's table, then smollm2 q4_0's fused FFN with and without its L2
# prefetch of the down columns (call 3: on llama-1b the prefetch cost 2.2 %).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
grep -i "FFN" $OUT/gpu.txt
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout 320 bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
cat $OUT/table/bench.md
echo "table done at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 30 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda --explain > $OUT/explain.txt 2>&1; grep -iE "FFN as one|tg128" $OUT/explain.txt | head -3
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_DEFINES=CORTIQ_FFN_NO_PREFETCH CMF_CUDA_FFN_FUSED=0" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=1 \
  DEADLINE=$((570-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
rm -f $OUT/ab/ab-runs.txt $OUT/ab/ab.log
(cd $OUT && tar czf table.tgz table && rm -rf table)
echo "end at $((SECONDS-start)) s"
