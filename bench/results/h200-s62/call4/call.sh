#!/usr/bin/env bash
# Session 62's fourth call, same binaries as calls 1-3, carrying .gl/ too (wgpu on Vulkan).
# Everything lands in $OUT/out.tgz.
# 1. README's Gemma table on this build: cuda (token graph, and now the prefill graph), wgpu,
#    cpu, 3 reps.
# 2. token_graph_matches_the_cpu_path on llama-1b's K-quant shapes (call 3 left them out), cuda only.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call4; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS="cuda wgpu cpu" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=100 timeout 200 bash bench/gpu-all.sh $W/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/gemma/bench.md; echo "gemma table at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
CORTIQ_REQUIRE_GPU= CORTIQ_PARITY_SHAPES=llama-1b:q4_k_m,llama-1b:q5_k_m timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact token_graph_matches_the_cpu_path > $W/token-graph.log 2>&1
echo "== token graph rc $?"; grep -E "graph vs CPU|test result|panicked" $W/token-graph.log | cut -c1-200 | tail -8
echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
