#!/usr/bin/env bash
# Session 47, call 2: README's table on this build (the six shapes of issue 8) and the
# Q4_K_M rows of llama-1b and llama-8b beside them, in one run.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_k_m llama-8b:q4_k_m smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=120 bash bench/gpu-all.sh $OUT/table \
  smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_k_m llama-8b:q4_k_m > /dev/null 2>&1
cat $OUT/table/bench.md
echo "end at $((SECONDS-start)) s"
