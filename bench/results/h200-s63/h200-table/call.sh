#!/usr/bin/env bash
# Session 63, prepared, not run (no H200 came): README's CUDA table by bench/gpu-all.sh
# (tg128 after -p 512, REPS=2) on main's build, carried as gpuab/cortiq-base.gz (it
# synthesizes the models, ~2-3 min for both llama-8b files): issue 8's six shapes plus the
# Q4_K_M and Q5_K_M rows, as session 56's call 1 (the last H200 table). On an H100 it stops.
# Since session 56 on the decode path: session 58's K-quant row kernels rolled (3e3e6bc;
# predicted from call 2 of session 56 on the H200: smollm2 q4_0 ~2374, llama-8b q8_0 ~428).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: no table"; exit 0 ;; esac
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
. bench/device-start.sh $table
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq-base BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $((580-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table $table > /dev/null 2>&1
cat $OUT/table/bench.md
tar czf $OUT/table-logs.tgz -C $OUT/table $(cd $OUT/table && ls *.log) && rm $OUT/table/*.log
echo "end at $((SECONDS-start)) s"
