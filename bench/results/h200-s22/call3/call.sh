#!/usr/bin/env bash
# Session 22 call 3: the CUDA table of record (bench/gpu-all.sh, REPS=2) with the int8 chain's two links on (the default).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "synth done at $((SECONDS-start)) s"
CMF_GPU=cuda ./cortiq gpu 2>&1 | grep -i chain
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
cat $OUT/table-cuda/bench.md
rm -f $OUT/table-cuda/*.log
echo "done at $((SECONDS-start)) s"
