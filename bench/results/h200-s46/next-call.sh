#!/usr/bin/env bash
# Prepared in session 46 (no device was lent), for the next session's first call, on main's
# build: (1) the token-graph parity of the code landed in session 45 (row kernels releasing
# the next launch before their wait), which has only been compiled by NVRTC, never run;
# (2) README's table on that build; (3) the CUDA weight budget from CMF_GPU_BUDGET and the
# graphs' refusal of a Q4_K_M model, named on stderr and in --explain (session 46).
# Carry gpuab/cortiq.gz and gpuab/gpu_parity.gz (README, "On the GPU machine").
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_k_m
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CMF_GPU=cuda CMF_GPU_BUDGET=1G ./cortiq gpu 2>&1 | grep -i "budget" > $OUT/budget.txt
cat $OUT/budget.txt
wait
echo "synth done at $((SECONDS-start)) s"
timeout 300 ./gpu_parity --test-threads 1 --nocapture cuda token_graph > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|cuda .*graph vs CPU" $OUT/parity.log | head -20
echo "parity done at $((SECONDS-start)) s"
CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 120 ./cortiq run -m $M/llama-1b-q4_k_m.gguf -n 16 --temp 0 --raw --explain "hello" > $OUT/q4_k_m-explain.txt 2>&1
grep -E "cannot build|graphs" $OUT/q4_k_m-explain.txt
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M bash bench/gpu-all.sh $OUT/table \
  smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/table/bench.md
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
