#!/usr/bin/env bash
# Prepared in session 47 (loans paused before it ran), for the next device call: apply
# bench/results/h200-s47/q6k-7bit.diff (git apply), build, carry gpuab. Q6_K in 7 bits a weight (low nibbles as Q4_0's payload, a 3-word record
# of high bits and scales) instead of 9 (int8 levels): the matmul parity, the token graphs
# and the int8 chain's bit-equality on the K-quant shapes, then the Q4_K_M rows beside
# llama-8b q4_0 in one run (call 4: llama-8b Q4_K_M 552.9, llama-1b 2028, smollm2 2307).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 240 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches int8_chain > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|q4_k|q6_k" $OUT/parity.log | head -40
echo "parity done at $((SECONDS-start)) s"
wait
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=100 bash bench/gpu-all.sh $OUT/table smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/table/bench.md
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
