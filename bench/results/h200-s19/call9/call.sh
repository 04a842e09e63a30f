#!/usr/bin/env bash
# Session 19 call 9: the final build's parity on the H200: QKV inside the attention split at head sizes 32 / 64 / 128 against the CPU path, the token graph on row-split weights (its --explain fallback lines), the attention kernels (the split's RoPE and append now one helper), the quantizer, the token graphs.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x ./gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
start=$SECONDS
timeout 120 ./gpu_parity --test-threads 1 --nocapture every_head_size split_weights wgpu_attention wgpu_quantizer > $OUT/parity-kernels.log 2>&1; echo "exit $?" >> $OUT/parity-kernels.log
grep -E "head size|split by rows|token graph:|exit|panicked|test result" $OUT/parity-kernels.log | head -20
timeout 250 ./gpu_parity --test-threads 1 --nocapture token_graph_matches > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
grep -E "graph vs CPU|exit|panicked|test result" $OUT/parity-graph.log | head -30
echo "done at $((SECONDS-start)) s"
