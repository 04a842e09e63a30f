#!/usr/bin/env bash
# Session 9 call 5: the wgpu int8-activation matvec (XMode::Int8, packed 4x8 integer dot products) in the kernel table beside the f32 kernels; its parity against the CPU int8 kernels on the H200; then the kernel table under two other workgroup shapes (bench/wgpu-shapes.sh, time permitting).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-new.gz > ./cortiq; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
( timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_int8 > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|wgpu: " $OUT/parity.log
timeout 150 ./cortiq gpu --kernels --bandwidth 3800 > $OUT/kernels.md 2> $OUT/kernels.log
cat $OUT/kernels.md
CORTIQ_BIN=./cortiq timeout 150 bash bench/wgpu-shapes.sh $OUT/shapes default 64x8 256x8 > /dev/null 2>&1; cat $OUT/shapes/shapes.md
