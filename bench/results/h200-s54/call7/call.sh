#!/usr/bin/env bash
# Session 54, call 7, on b1ba012's build (wgpu's Q5_1 / Q5_K kernels; planar.rs's Q4_1 repack
# branch now shared with Q5_1, which CUDA's Q4_1 layout goes through): the matmul harness, the
# upload / decline test on CUDA (the token-graph test left out: the device time left). Prediction: as call 6.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
. bench/device-start.sh
timeout 330 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes weights_upload_once_and_unsupported_codecs_decline_untouched > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|argmax agreement" $OUT/parity.log | cut -c1-200
gzip $OUT/parity.log
