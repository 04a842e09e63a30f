#!/usr/bin/env bash
# Session 64, call 3 (the H200 of calls 1-2, warm): the CUDA parity groups (as
# bench/gpu-wgpu.sh's first group; wgpu has no adapter here and says SKIP) on
# gpu_parity-both, the build main landed (split pieces + ldmatrix; main's flash.cu differs
# from it in comment text only). out/parity.log.
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh; nvidia-smi --query-gpu=name --format=csv,noheader; W=/tmp/call3; mkdir -p $W; timeout 420 ./gpu_parity-both --test-threads 1 --nocapture cuda_ matmul prefill_graph qkv_batch token_graph weights_upload > $W/parity.log 2>&1; echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|FAILED" $W/parity.log | cut -c1-200 | tail -40; tar czf $OUT/out.tgz -C $W .
