#!/usr/bin/env bash
# Session 38, call 6: the fused FFN's parity test after its CPU-fed decode and distances moved
# into helpers it shares with the cluster test (decode_fed, decode_distances).
set -u
cd "$(dirname "$0")/../../../.."
gunzip -c gpuab/gpu_parity.gz > ./gpu_parity && chmod +x ./gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=cuda
timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_fused_ffn_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^cuda .*fused FFN vs CPU|panicked|^test result|^rc" $OUT/parity.log
gzip $OUT/parity.log
