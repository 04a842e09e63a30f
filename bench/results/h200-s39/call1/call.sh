#!/usr/bin/env bash
# Session 39, call 1: (1) parity of main's fused FFN and token graph on the GPU (session 38's
# last commits, FIX_LIMIT 2^24 and the review's kernel refactors, were only compiled by NVRTC);
# (2) the A/B of three experiments, one binary: the QKV or gate/up kernels' weight ring at 16
# units a thread (CMF_X_RING), and the head's row groups claimed from 8 pooled counters for
# the last two groups a warp (CORTIQ_X_HEAD_CLAIM) or for all (+ CORTIQ_X_CLAIM_ALL).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_fused_ffn_matches_the_cpu_path token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity.log | head -12
grep -E "fused FFN vs CPU|graph vs CPU" $OUT/parity.log | head -24
echo "parity done at $((SECONDS-start)) s"
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_RING=glu:16 CMF_X_RING=qkv:16 CMF_CUDA_DEFINES=CORTIQ_X_HEAD_CLAIM CMF_CUDA_DEFINES=CORTIQ_X_HEAD_CLAIM,CORTIQ_X_CLAIM_ALL" \
  BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
