#!/usr/bin/env bash
# Session 54: the GPU parity harness on Mesa's software Vulkan adapter (lavapipe) on the
# 2-core development machine (no GPU): the wgpu tests run on tiny shapes (a non-discrete
# adapter), the CUDA ones SKIP. gpu_parity.log.gz is this script's output with the
# wgpu Q5_K kernel (33 passed).
# token-graph-smollm2-q4_k_m.txt, token-graph-smollm2-q5_k_m.txt: the token-graph test once
# more with its non-discrete shape list replaced by hand with [("smollm2-135m", "q4_k_m")]
# (Q5_0 rows), then [("smollm2-135m", "q5_k_m")] (Q5_1 rows), lines filtered by grep.
set -euo pipefail
cd "$(dirname "$0")/../../.."
command -v vulkaninfo >/dev/null || [ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || apt-get install -y -qq --no-install-recommends mesa-vulkan-drivers
CMF_GPU_ADAPTER=llvmpipe cargo test --release --features gpu,cuda -p cortiq-engine --test gpu_parity -- --test-threads 1 --nocapture 2>&1 | grep -v XDG_RUNTIME
