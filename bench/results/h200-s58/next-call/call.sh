#!/usr/bin/env bash
# Session 58's prepared call, not run (no device time left). Carries .gl/ and gpuab/ (each
# `cargo build --release --features gpu,cuda`, stripped and gzipped):
#   cortiq.gz          main: the f16 guard's word cleared and copied out inside the prefill
#                      chunk's own command encoder (guard-in-encoder.diff, landed untimed)
#   cortiq-5aee1e8.gz  5aee1e8's build (no guard)
#   cortiq-531c31a.gz  531c31a's build (the guard's first form: write_buffer and a second
#                      command buffer; -3.0 % llama-1b q4_0 pp512 on an H100, session 58 call 5)
#   gpu_parity.gz      main's
# 1. The guard's test on main with the matrix units (one rerun on the scaled model).
# 2. A/B, pp512, eight rounds, llama-1b q4_0, the three builds. Prediction: main within 1 %
#    of 5aee1e8, 531c31a ~3 % below both.
# 3. On an H200: README's CUDA table (11 rows) on main, then the wgpu table.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
h200=0; case "$gpu" in *H200*) h200=1 ;; esac
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q5_k_m llama-8b:q5_k_m"
if [ $h200 = 1 ]; then . bench/device-start.sh $table; else . bench/device-start.sh llama-1b:q4_0; fi
CORTIQ_REQUIRE_GPU=wgpu timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_prefill_past_f16_range_follows_the_cpu_path > $OUT/guard.log 2>&1
echo "== guard rc $?"; grep -E "rerun|q x 1e6|test result|panicked" $OUT/guard.log
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-5aee1e8 ./cortiq-531c31a" BACKEND=wgpu PROMPT=512 GEN=16 REPS=3 ROUNDS=8 MODELS_DIR=$M DEADLINE=150 bash bench/ab.sh $OUT/ab llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md; echo "ab at $((SECONDS-start)) s"
[ $h200 = 1 ] || exit 0
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $((470-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table $table > /dev/null 2>&1
cat $OUT/table/bench.md; echo "table at $((SECONDS-start)) s"
t6="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0"
CORTIQ_BIN=./cortiq BACKENDS=wgpu BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout $((580-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu $t6 > /dev/null 2>&1
cat $OUT/table-wgpu/bench.md; echo "end at $((SECONDS-start)) s"
