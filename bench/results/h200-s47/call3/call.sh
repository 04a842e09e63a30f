#!/usr/bin/env bash
# Session 47, call 3: Q6_K in the int8 chain (matvec_img / gate_up_q8 for kind 5) and in
# dequant_f16 (so Q4_K_M prompts take cuBLAS): the chain's bit-equality test on tiny q4_k_m
# and q6_k, the token and prefill graphs again (tiny q6_k added), then the Q4_K_M rows
# beside llama-8b q4_0 in one run.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 330 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches int8_chain prefill_graph_chunks > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked|graph vs CPU|prefill graph \(|chain" $OUT/parity.log | grep -v "^cuda .* q4_0\|q8_0\|q4_1" | head -60
echo "parity done at $((SECONDS-start)) s"
wait
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=120 bash bench/gpu-all.sh $OUT/table llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/table/bench.md
grep -h "graph\|chain" $OUT/table/*q4_k_m*.log | head -10
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
