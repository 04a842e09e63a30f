#!/usr/bin/env bash
# Session 56, call 1, on main's build (9f44707: CUDA's device_layout through the shared
# transcodes; its CUDA side not yet run on a GPU).
# 1. Parity: the matmul harness (prediction: pass, 135 codec/shape cases) and the token /
#    prefill graph test narrowed to tiny q4_0, q5_1 and bf16 (prediction: pass, the figures
#    of session 55's calls 2-3).
# 2. On an H200 only: README's CUDA table by bench/gpu-all.sh (tg128 after -p 512, REPS=2) on
#    this build: issue 8's six shapes, the Q4_K_M and Q5_K_M rows (README's table is session
#    47's build; session 55 re-read six rows by cortiq bench directly, -2.0 to +0.7 %).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
case "$gpu" in *H200*) . bench/device-start.sh $table ;; *) . bench/device-start.sh ;; esac
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_PARITY_SHAPES=tiny:q4_0,tiny:q5_1,tiny:bf16 timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|graph vs CPU" $OUT/parity.log | cut -c1-220
gzip $OUT/parity.log
case "$gpu" in *H200*) ;; *) echo "not an H200: no table"; exit 0 ;; esac
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $((580-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table $table > /dev/null 2>&1
cat $OUT/table/bench.md
tar czf $OUT/table-logs.tgz -C $OUT/table $(cd $OUT/table && ls *.log) && rm $OUT/table/*.log
echo "end at $((SECONDS-start)) s"
