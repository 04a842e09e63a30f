#!/usr/bin/env bash
# Session 16 call 7 (review mend): the graph's [token, position] and the readback events kept per sequence mirror (no cross-sequence restore, no event made per token); CUDA parity of the tokens queued ahead (greedy, interleaved sequences, sampled) and the graph against the CPU. wgpu left out (CMF_GPU_ADAPTER=99).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x ./gpu_parity
. bench/gpu-env.sh
CORTIQ_REQUIRE_GPU=0 CMF_GPU_ADAPTER=99 CMF_GPU=cuda timeout 150 ./gpu_parity --test-threads 1 --nocapture sampled_tokens_drawn_ahead token_graph_candidates token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|^test |exit|panicked|test result" $OUT/parity.log | grep -v "prefill graph" | head -30
