#!/usr/bin/env bash
# Session 41, call 2: the L2 policy's cost and worth, one call: cortiq-plain (70718e4: weight
# copies without a cache hint), cortiq-base (515b2fe: evict-first compiled in), cortiq-new
# (the policy read from a __constant__ the host sets per model, CMF_CUDA_L2_WEIGHTS first /
# normal); then README's table with cortiq-new at its default (by size).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
for b in plain base new; do CMF_GPU=cuda ./cortiq-$b gpu > $OUT/gpu-$b.txt 2>&1 & done; wait
grep -h -E "could not|weight copies" $OUT/gpu-*.txt
echo "synth + kernels done at $((SECONDS-start)) s"
BINS="./cortiq-plain ./cortiq-base ./cortiq-new" VARIANTS="CMF_CUDA_L2_WEIGHTS=first CMF_CUDA_L2_WEIGHTS=normal" \
  BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 smollm2-135m:q8_0 llama-1b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq-new BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout $((570-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
cat $OUT/table/bench.md
(cd $OUT && tar czf table.tgz table && rm -rf table)
echo "end at $((SECONDS-start)) s"
