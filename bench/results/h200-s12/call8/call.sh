#!/usr/bin/env bash
# Session 12 call 8: the whole parity harness (wgpu and CUDA) on the H200 at main 97db4e2 (cuBLAS prompt GEMMs, tensor-core prompt attention, the 2-unit wgpu int8 GEMM), for the issues' logs.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x ./gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
( timeout 200 ./gpu_parity --test-threads 1 --nocapture > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|greedy argmax agreement" $OUT/parity.log | head -40
