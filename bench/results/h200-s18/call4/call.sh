#!/usr/bin/env bash
# Session 18 call 4: the wgpu table of record with this session's build (bench/gpu-all.sh, greedy, -p 512 -n 128, 2 reps), then smollm2 on the int8 graph (now 6 dispatches a layer, as its f32 graph) against the f32 graph, alternating; then the wgpu stage ablation at the table's context (bench/anatomy.sh, as far as the call's time goes).
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
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 MODELS_DIR=$M bash bench/gpu-all.sh $OUT/table-wgpu > /dev/null 2>&1
cat $OUT/table-wgpu/bench.md
echo "table done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_INT8=0 CMF_WGPU_INT8=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((420-(SECONDS-start))) bash bench/ab.sh $OUT/ab-smollm2-int8 smollm2-135m:q4_0 smollm2-135m:q8_0 > /dev/null
cat $OUT/ab-smollm2-int8/ab-runs.txt
rm -f $OUT/ab-*/ab.log
CORTIQ_BIN=./cortiq BACKEND=wgpu MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/anatomy.sh $OUT/anatomy-wgpu > /dev/null 2>&1
cat $OUT/anatomy-wgpu/anatomy.md
echo "done at $((SECONDS-start)) s"
