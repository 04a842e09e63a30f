#!/usr/bin/env bash
# Session 21 call 5: the wgpu table of record (bench/gpu-all.sh, REPS=2) with the prompt attention on the matrix units; carries the real default model's first part and this build's cortiq to /tmp/cq for call 6.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/cq && cp gpuab-p1/smol.part1 /tmp/cq/
gunzip -c gpuab-p1/cortiq.gz > /tmp/cq/cortiq; chmod +x /tmp/cq/cortiq; cp /tmp/cq/cortiq ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > /dev/null 2>&1
cat $OUT/table-wgpu/bench.md
rm -f $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
