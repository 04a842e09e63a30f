#!/usr/bin/env bash
# Session 56, call 4 (not run: no machine came; bench/results/h200-s56/next-call/ takes it up): the ring prologue's unroll for the K-quant kinds. Two builds
# alternating, tg128 after -p 512, two rounds: ./cortiq-k (3e3e6bc, unrolled for kinds 6 / 7
# only), ./cortiq (unrolled for kinds 6 / 7's tile kernels only, NB > 1: the miscompile was
# in a tile kernel; NVRTC 13.0's machine code checked here: no uniform-register LDGSTS).
# ./cortiq-k compiles its kernels (~110 s by NVRTC) while the parity test runs.
# Parity first for ./cortiq (kinds 6 / 7's decode kernels now rolled): the matmul harness and
# the token / prefill graphs on tiny q4_k_m / q5_k_m and llama-1b q4_k_m.
# Prediction: ./cortiq over ./cortiq-k on the
# Q4_K_M rows by ~1-2 % if kinds 6 / 7's decode kernels lose to the unroll as kinds 0 / 2 did.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
specs="llama-8b:q4_k_m llama-1b:q4_k_m smollm2-135m:q4_k_m"
. bench/device-start.sh $specs
(CMF_GPU=cuda ./cortiq-k gpu > $OUT/gpu-k.txt 2>&1 &)
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_PARITY_SHAPES=tiny:q4_k_m,tiny:q5_k_m,llama-1b:q4_k_m timeout 150 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test result|panicked|codec/shape|graph vs CPU" $OUT/parity.log | cut -c1-220
gzip $OUT/parity.log
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-k ./cortiq" PROMPT=512 GEN=128 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((260-(SECONDS-start))) bash bench/ab.sh $OUT/ab $specs > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
