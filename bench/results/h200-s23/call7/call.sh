#!/usr/bin/env bash
# Session 23 call 7: the landed build (the grouped merge kernel, combining only past 16 chunks): the CUDA table of record (REPS=2), then against 0e33d09 (cortiq-old, the last block's merge) at -p 2000 alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
CMF_GPU=cuda ./cortiq-old gpu > /dev/null 2>&1 &
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout 120 bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
wait
cat $OUT/table-cuda/bench.md; rm -f $OUT/table-cuda/*.log
echo "table done at $((SECONDS-start)) s"
BINS="./cortiq-old ./cortiq" BACKEND=cuda PROMPT=2000 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((110-(SECONDS-start))) bash bench/ab.sh $OUT/ab-p2000 llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-p2000/ab.md $OUT/ab-p2000/ab-runs.txt; rm -f $OUT/ab-p2000/ab.log
echo "done at $((SECONDS-start)) s"
