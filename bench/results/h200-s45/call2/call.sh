#!/usr/bin/env bash
# Session 45, call 2: every kernel lets the next one launch before its own wait
# (CMF_CUDA_DEFINES=CORTIQ_X_RELEASE_FIRST; landed: after it), so the next kernel's blocks
# enter while this one's still run (call 1: gate/up's blocks entered after o had ended, 2 of
# 256 before); alternating against the landed order, tg128 after -p 512; the block timeline of
# llama-1b with it; the token-graph parity with it.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0 llama-1b:q8_0
CMF_GPU=cuda CMF_CUDA_DEFINES=CORTIQ_X_RELEASE_FIRST ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_DEFINES=CORTIQ_X_RELEASE_FIRST" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
echo "ab done at $((SECONDS-start)) s"
DEFINES=CORTIQ_X_RELEASE_FIRST CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout $((390-(SECONDS-start))) bash bench/timeline.sh $OUT/tl-rf llama-1b:q4_0 > $OUT/timeline-rf.md 2>&1
head -34 $OUT/timeline-rf.md
CMF_CUDA_DEFINES=CORTIQ_X_RELEASE_FIRST timeout $((585-(SECONDS-start))) ./gpu_parity --test-threads 1 --nocapture cuda token_graph > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked|graph vs CPU" $OUT/parity.log | head -20
(cd $OUT && gzip parity.log; tar czf ab.tgz ab && rm -rf ab && rm -f tl-*/trace-* ; tar czf tl.tgz tl-* && rm -rf tl-*)
echo "end at $((SECONDS-start)) s"
