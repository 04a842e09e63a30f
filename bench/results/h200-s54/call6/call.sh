#!/usr/bin/env bash
# Session 54, call 6: call 5 failed the new check in
# weights_upload_once_and_unsupported_codecs_decline_untouched on CUDA (an IQ4_XS matrix whose
# block scale has no f16 was reported as a device failure, not declined); now a weight that
# cannot take its device layout declines (`Unfit::Layout`). Prediction: the test passes, the
# matmul harness as before (115 cases).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
. bench/device-start.sh
timeout 300 ./gpu_parity --test-threads 1 --nocapture --exact weights_upload_once_and_unsupported_codecs_decline_untouched matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape" -A1 $OUT/parity.log | cut -c1-200
gzip $OUT/parity.log
