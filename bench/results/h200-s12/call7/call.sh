#!/usr/bin/env bash
# Session 12 call 7: the wgpu int8 prompt GEMM's default is now 2 units a stage (fits 16 KiB adapters; call 6 had 2 and 4 within noise): a second A/B round of 2 vs 4, then the wgpu table of record with the default.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done; wait
BINS="./cortiq" VARIANTS="CMF_WGPU_GEMM_UNITS=2 CMF_WGPU_GEMM_UNITS=4" BACKEND=wgpu PROMPT=512 GEN=16 REPS=2 ROUNDS=2 DEADLINE=150 bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0
cat $OUT/ab-pp/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout $((330-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
