#!/usr/bin/env bash
# Session 54, call 5, on 32e971b's build (the rewrites moved from gpu/cuda/layout.rs into
# gpu/transcode.rs, shared with wgpu; CUDA's behaviour meant to be unchanged): the matmul
# harness and the token / prefill graph test on CUDA again. Prediction: as call 1 (115
# cases, the same agreement counts up to the random seeds of the harness).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
. bench/device-start.sh
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 420 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path weights_upload_once_and_unsupported_codecs_decline_untouched > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|argmax agreement" $OUT/parity.log | cut -c1-200
gzip $OUT/parity.log
