#!/usr/bin/env bash
# Session 21 call 11: the final build's parity: the matrix-unit GEMM's knob forms with stages loaded two ahead (CMF_WGPU_COOP_STAGE=2x1x2, 2x2x2; call 8 timed 2x1x2 only), the prompt attention against the exact softmax, the prefill graph.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x ./gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
for v in 2x1x2 2x2x2; do CMF_WGPU_COOP_STAGE=$v timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-$v.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-$v.log; echo "== stage $v"; grep -E "SKIP|matched|exit|panicked|cortiq:" $OUT/parity-gemm-$v.log | head -4; done
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_attention_matches > $OUT/parity-attention.log 2>&1; echo "exit $?" >> $OUT/parity-attention.log; grep -E "SKIP|exit|panicked|256 rows" $OUT/parity-attention.log | head -6
timeout 90 ./gpu_parity --test-threads 1 --nocapture prefill_graph_chunks > $OUT/parity-prefill.log 2>&1; echo "exit $?" >> $OUT/parity-prefill.log; grep -E "exit|panicked|^wgpu .*256 \+ rest" $OUT/parity-prefill.log | head -8
