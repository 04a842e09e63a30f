#!/usr/bin/env bash
# Session 13 call 4: the tables of record (README) from the binary of call 3 (both branches landed + device top-k): CUDA, then wgpu, REPS=2, the six shapes.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-new.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
start=$SECONDS
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 timeout 270 bash bench/gpu-all.sh $OUT/table-cuda > $OUT/gpu-all-cuda.log 2>&1; cat $OUT/table-cuda/bench.md
echo "cuda table done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout $((560-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
echo "done at $((SECONDS-start)) s"
