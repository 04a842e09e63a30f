#!/usr/bin/env bash
# Session 57, call 2 (the same H100, warm, 121 s of device time left): with Vulkan up (call 1),
# the parity harness and the token / prefill graph test on tiny q4_0 for both backends, then
# smollm2 q4_0 through wgpu (tg128 after -p 512, one run). The command as run (one line):
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0; export CORTIQ_REQUIRE_GPU=wgpu; CORTIQ_PARITY_SHAPES=tiny:q4_0 timeout 110 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|graph vs CPU|wgpu.*cases|codec/shape" $OUT/parity.log | cut -c1-200 | head -20; wait; for be in wgpu cuda; do CMF_GPU=$be timeout 40 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 1 --backend $be 2>&1 | grep -E "pp512|tg128"; done; echo "end at $((SECONDS-start)) s"
# Output: parity rc 124 at 110 s (the limit: both backends' tiny q4_0 figures were in, the
# test's end not); wgpu smollm2 q4_0 pp512 24539.9, tg128 915.3 tok/s; the CUDA run printed
# nothing inside its 40 s (call 3 ran it alone).
