#!/usr/bin/env bash
# Session 12 call 5: the CUDA table of record (main with cuBLAS prompt GEMMs and tensor-core prompt attention by default; binary as in call 4).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 timeout 540 bash bench/gpu-all.sh $OUT/table-cuda > $OUT/gpu-all-cuda.log 2>&1; cat $OUT/table-cuda/bench.md
