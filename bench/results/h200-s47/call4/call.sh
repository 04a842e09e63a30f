#!/usr/bin/env bash
# Session 47, call 4, on the build README states: Q5_0 (Q4_K_M's fallback for rows that are
# not whole superblocks) transcoded to Q8_0: the matmul parity of every codec and the token
# and prefill graphs (smollm2 q4_k_m added); then README's table, the six shapes of issue 8
# and the Q4_K_M rows, in one run.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 300 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|q4_k_m: graph vs CPU" $OUT/parity.log | head -30
echo "parity done at $((SECONDS-start)) s"
wait
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=120 bash bench/gpu-all.sh $OUT/table \
  smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m > /dev/null 2>&1
cat $OUT/table/bench.md
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
