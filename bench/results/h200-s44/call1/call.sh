#!/usr/bin/env bash
# Session 44, call 1: session 43's prepared V-in-registers variant for the 128-wide per-head
# attention (CMF_CUDA_DEFINES=CORTIQ_X_V_REGS, one binary: eb950f8 + v-registers.diff) against
# the same binary without it, alternating; its exact-softmax parity; and the block timelines of
# llama-8b q4_0 and llama-1b q4_0 at the table's depth on the base kernels.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
CMF_CUDA_DEFINES=CORTIQ_X_V_REGS timeout 120 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked" $OUT/parity.log | head
echo "parity done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_DEFINES=CORTIQ_X_V_REGS" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-8b:q4_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_DEFINES=CORTIQ_X_V_REGS" BACKEND=cuda PROMPT=4096 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((390-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p4096 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/p4096/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/timeline.sh $OUT/tl llama-8b:q4_0 llama-1b:q4_0 > $OUT/timeline.md 2>&1
cat $OUT/timeline.md | head -80
(cd $OUT && gzip parity.log && tar czf ab.tgz ab && rm -rf ab && tar czf tl.tgz tl && rm -rf tl)
echo "end at $((SECONDS-start)) s"
