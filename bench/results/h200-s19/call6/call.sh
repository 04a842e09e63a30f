#!/usr/bin/env bash
# Session 19 call 6: carries the real model's first part and this build's cortiq to /tmp/cq for call 7; the build keeps a normed row's int8 scales (d, d * sum) in f32 (call 5: the real model's wgpu int8 graph agreed with llama.cpp at 179/192 only, logits 5.0 from the CPU path's; f16 scales at the unnormed scale flush or overflow); the parity harness's int8 tests (quantizer with the new mode-3 scale cases, residual and gate/up kernels) and the token graph's.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/cq && cp gpuab-p1/smol.part1 /tmp/cq/
gunzip -c gpuab-p1/cortiq.gz > /tmp/cq/cortiq; chmod +x /tmp/cq/cortiq
gunzip -c gpuab-p1/gpu_parity.gz > ./gpu_parity; chmod +x ./gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
start=$SECONDS
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_quantizer wgpu_residual wgpu_gate_up > $OUT/parity-kernels.log 2>&1; echo "exit $?" >> $OUT/parity-kernels.log
grep -E "exit|panicked|test result|cases" $OUT/parity-kernels.log | head
timeout 250 ./gpu_parity --test-threads 1 --nocapture token_graph_matches > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
grep -E "graph vs CPU|exit|panicked|test result" $OUT/parity-graph.log | head -30
ls -la /tmp/cq
echo "done at $((SECONDS-start)) s"
