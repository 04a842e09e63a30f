#!/usr/bin/env bash
# Session 50, call 1: Q5_K on CUDA (kind 7: kind 6's payload and superblock records, plus a
# word a unit of the levels' fifth bits, 5.625 bits a weight). Carries ./cortiq and
# ./gpu_parity of this build. Parity first: the matmul harness (Q5_K on 5 shapes among the
# codecs, against the CPU's new int8 Q5_K kernel at 1e-6), the token / prefill graphs (tiny
# and llama-1b q5_k_m among the shapes), the int8 chain bit for bit (tiny q5_k_m among them).
# Then bench/gpu-all.sh on llama-1b / llama-8b q5_k_m beside q4_k_m, tg128 after -p 512.
# Prediction (bytes): llama-8b Q5_K_M reads ~1.17x Q4_K_M's bytes a token (its Q4_K matrices
# at 5.625 bits instead of 4.625, Q6_K's unchanged), so decode ~0.85x Q4_K_M's rate if the
# row kernels stay at the same fraction of the floor; the 8 more dp4a a unit should not show.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-8b:q5_k_m llama-1b:q5_k_m llama-8b:q4_k_m llama-1b:q4_k_m
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 220 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
timeout 150 ./gpu_parity --test-threads 1 --nocapture int8_chain >> $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|first differing step Some|q5_k" $OUT/parity.log | head -40
echo "parity done at $((SECONDS-start)) s"
wait
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=$bw REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=120 bash bench/gpu-all.sh $OUT/table \
  llama-1b:q5_k_m llama-1b:q4_k_m llama-8b:q5_k_m llama-8b:q4_k_m > /dev/null 2>&1
cat $OUT/table/bench.md
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
