#!/usr/bin/env bash
# Session 52, call 1. First session 51's open question: does cuda_fused_ffn_matches_the_cpu_path
# fail its greedy-count check (llama-8b q4_0: fused 18/24 vs two launches 19/24 on an H100)
# with 0669216's build too (./gpu_parity_main, no kind 7, no unrolled prologue) as with main's
# (./gpu_parity, d2cc611)? Run one after the other. Prediction: the same counts from both
# builds on the same card, so the check's miss is the card's near ties, not a change.
# Then, on an H200: README's table (bench/gpu-all.sh, the issue's six shapes and the K-quant
# rows) on main's ./cortiq; on any other card: the rest of main's gpu_parity.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
specs=""
case "$gpu" in *H200*) specs="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m" ;; esac
. bench/device-start.sh $specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
for b in gpu_parity_main gpu_parity; do
  timeout 200 ./$b --test-threads 1 --nocapture --exact cuda_fused_ffn_matches_the_cpu_path > $OUT/$b-ffn.log 2>&1
  echo "== $b rc $? at $((SECONDS-start)) s"; grep -E "fused FFN vs CPU|panicked|test result" $OUT/$b-ffn.log
done
left=$((570-(SECONDS-start)))
case "$gpu" in
  *H200*)
    wait; echo "models at $((SECONDS-start)) s"
    CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=100 bash bench/gpu-all.sh $OUT/table $specs > /dev/null 2>&1
    cat $OUT/table/bench.md ;;
  *)
    timeout $left ./gpu_parity --test-threads 1 --nocapture --skip cuda_fused_ffn_matches_the_cpu_path --skip wgpu_ > $OUT/parity.log 2>&1
    echo "rc $?" >> $OUT/parity.log
    grep -E "^test |^test result|^rc|panicked" $OUT/parity.log | head -60; gzip $OUT/parity.log ;;
esac
echo "end at $((SECONDS-start)) s"
