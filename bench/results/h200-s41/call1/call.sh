#!/usr/bin/env bash
# Session 41, call 1: the weight copies' L2 policy chosen per model (l2.rs,
# CMF_CUDA_L2_WEIGHTS): evict-first (session 40's, for every model), no hint, and half the
# lines kept (evict-last in the persisting share) on the models near the L2's size and
# llama-1b; the token graph's parity at the default (by size).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
grep -E "kernels:|weight copies" $OUT/gpu.txt
CMF_CUDA_L2_WEIGHTS=keep CMF_GPU=cuda ./cortiq gpu 2>&1 | grep -E "could not|weight copies"
timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity.log | head -6; grep -E "graph vs CPU" $OUT/parity.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_CUDA_L2_WEIGHTS=first CMF_CUDA_L2_WEIGHTS=normal CMF_CUDA_L2_WEIGHTS=keep" \
  BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((530-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 smollm2-135m:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
CMF_GPU=cuda ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --explain 2>&1 | grep -iE "weight copies" | head -3
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
