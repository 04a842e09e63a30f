#!/usr/bin/env bash
# Session 54, call 4 (call 2 on an H200, with the build that adds wgpu's transcodes: CUDA
# unchanged): README's CUDA table (bench/gpu-all.sh, tg128 after -p 512, REPS=2) on
# this session's build: issue 8's six shapes, the Q4_K_M rows and the Q5_K_M rows, in one run
# on one card (README's table is session 47's build; the K-quant layouts changed since, in
# sessions 48-51, measured only on H100s). Runs only on an H200.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) echo "not an H200: stop"; exit 0 ;; esac
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
. bench/device-start.sh $table
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
# While the models are written: the matmul harness and the token / prefill graph test on the
# H200 (prediction: pass, 115 codec/shape cases, every moved greedy pick a near-tie).
timeout 300 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|argmax agreement" $OUT/parity.log | cut -c1-200
gzip $OUT/parity.log
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=$bw REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $((570-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table $table > /dev/null 2>&1
cat $OUT/table/bench.md
tar czf $OUT/table-logs.tgz -C $OUT/table $(cd $OUT/table && ls *.log) && rm $OUT/table/*.log
echo "end at $((SECONDS-start)) s"
