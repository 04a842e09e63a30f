#!/usr/bin/env bash
# Session 54, call 3: the rest of gpu_parity on CUDA (every test but call 1's two), so the
# whole harness has run on this build. Prediction: all pass.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
. bench/device-start.sh
timeout 560 ./gpu_parity --test-threads 1 --nocapture --skip matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes --skip token_graph_matches_the_cpu_path > $OUT/parity-rest.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked" $OUT/parity-rest.log | cut -c1-200
gzip $OUT/parity-rest.log
