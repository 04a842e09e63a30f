#!/usr/bin/env bash
# Session 55 on the 2-core development machine, Mesa's software Vulkan (lavapipe): the matmul
# harness and the upload / decline test (harness.log.gz: 135 codec/shape cases, BF16's 10 new,
# held as F16), then the token graph test (token-graph.log.gz: tiny bf16 and q5_1 among its
# shapes). Needs mesa-vulkan-drivers and a gpu_parity built with --features gpu,cuda.
set -eu
cd "$(dirname "$0")/../../.."
cargo test --release --features gpu,cuda -p cortiq-engine --test gpu_parity --no-run
b=$(ls -t target/release/deps/gpu_parity-* | grep -v '\.d$' | head -1)
CMF_GPU_ADAPTER=llvmpipe $b --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes weights_upload_once_and_unsupported_codecs_decline_untouched 2>&1 | gzip > bench/results/lavapipe-s55/harness.log.gz
CMF_GPU_ADAPTER=llvmpipe $b --test-threads 1 --nocapture --exact token_graph_matches_the_cpu_path 2>&1 | gzip > bench/results/lavapipe-s55/token-graph.log.gz
