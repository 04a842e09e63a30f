#!/usr/bin/env bash
# Session 47, call 1: K-quants on CUDA (Q4_K as Q4_1, Q6_K as kind 5, Q/K and V launched
# apart where V's kind differs) against the CPU path: the matmul parity of every codec, the
# token graph (tiny q4_k, tiny q4_k_m, llama-1b q4_k_m beside the earlier shapes, which also
# covers session 45's release-first row kernels), the prefill graph, the fused FFN on tiny
# q4_k; then --explain on llama-1b q4_k_m, and the CUDA weight budget from CMF_GPU_BUDGET.
# Carry gpuab/cortiq.gz and gpuab/gpu_parity.gz.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_k_m
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CMF_GPU=cuda CMF_GPU_BUDGET=1G ./cortiq gpu 2>&1 | grep -i "budget" > $OUT/budget.txt
cat $OUT/budget.txt
timeout 420 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches cuda_fused_ffn prefill_graph_chunks > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked|graph vs CPU|prefill graph \(|fused FFN vs|codec/shape cases" $OUT/parity.log | head -60
echo "parity done at $((SECONDS-start)) s"
wait
CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 100 ./cortiq run -m $M/llama-1b-q4_k_m.gguf -n 32 --temp 0 --raw --explain "hello" > $OUT/q4_k_m-explain.txt 2>&1
tail -25 $OUT/q4_k_m-explain.txt
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
