#!/usr/bin/env bash
# Session 51, call 1: CUDA Q5_K (kind 7) again, with session 50's crash mended. Session 50's
# one-row prompts died with CUDA_ERROR_ILLEGAL_INSTRUCTION at qkv_rope_tile_k7_r2+0x1dc0; the
# module's PTX compiled by CUDA 13.0's ptxas (the driver 580 JIT's) puts there an LDGSTS in
# the uniform-offset form `[R+UR0], desc[UR1]` whose UR0 / UR1 nothing writes (ptxas 13.5
# does not emit it). Fully unrolling run_rows' ring prologue removes every such form from
# the module (NOTES.md, session 51). Carries ./cortiq and ./gpu_parity of this build.
# Parity: matmul harness, token / prefill graphs (tiny and llama-1b q5_k_m among the shapes,
# one-row prompts included), int8 chain; then prompts of 1, 2, 9 rows on tiny q5_k_m / q5_k
# (the row-tile kernels); then bench/gpu-all.sh, tg128 after -p 512, Q5_K_M beside Q4_K_M.
# Prediction: parity passes; speeds as session 50's (llama-8b Q5_K_M ~0.87x Q4_K_M).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-8b:q5_k_m llama-1b:q5_k_m llama-8b:q4_k_m llama-1b:q4_k_m tiny:q5_k_m tiny:q5_k
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 220 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
timeout 150 ./gpu_parity --test-threads 1 --nocapture int8_chain >> $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|first differing step Some|q5_k" $OUT/parity.log | head -40
echo "parity done at $((SECONDS-start)) s"
wait
for m in tiny-q5_k_m tiny-q5_k; do
  for p in 1 2 9; do
    CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/$m.gguf -p $p -n 4 -r 1 --backend cuda > $OUT/$m-p$p.log 2>&1
    echo "$m p$p rc $?: $(grep -E "tg4|pp$p |ILLEGAL|rror" $OUT/$m-p$p.log | head -3 | tr '\n' ' ')"
  done
done
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=$bw REPS=1 MODELS_DIR=$M BENCH_TIMEOUT=120 bash bench/gpu-all.sh $OUT/table \
  llama-1b:q5_k_m llama-1b:q4_k_m llama-8b:q5_k_m llama-8b:q4_k_m > /dev/null 2>&1
cat $OUT/table/bench.md
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
