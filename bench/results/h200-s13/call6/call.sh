#!/usr/bin/env bash
# Session 13 call 6: the wgpu table of record with multi-matrix dispatches (the binary of call 5, CMF_WGPU_MULTI unset = on), REPS=2, the six shapes; the bench.md printed so it survives the tool's file-count limit.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-multi.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
start=$SECONDS
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout 500 bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
rm -f $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
