#!/usr/bin/env bash
# Session 44, call 3 (call 2's binary; the parity test's long prompt fitted to tiny's 2048
# context): the merge in the output projection's parity against the CPU path; the A/B at
# 8 units a block, one row a thread, beside n4r1 and n8r2; and block timelines with it on.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
wait
echo "synth done at $((SECONDS-start)) s"
timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_output_projection_merge > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|merge in o vs" $OUT/parity.log | head -20
echo "parity done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_ATT_O=n8r1 CMF_CUDA_ATT_O=n4r1 CMF_CUDA_ATT_O=n8r2" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((400-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
echo "ab done at $((SECONDS-start)) s"
CMF_CUDA_ATT_O=n4r1 CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout $((500-(SECONDS-start))) bash bench/timeline.sh $OUT/tl-n4r1 llama-1b:q4_0 > $OUT/timeline-n4r1.md 2>&1
head -14 $OUT/timeline-n4r1.md
CMF_CUDA_ATT_O=n8r2 CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout $((570-(SECONDS-start))) bash bench/timeline.sh $OUT/tl-n8r2 llama-8b:q4_0 > $OUT/timeline-n8r2.md 2>&1
head -14 $OUT/timeline-n8r2.md
(cd $OUT && gzip parity.log && tar czf ab.tgz ab && rm -rf ab && tar czf tl.tgz tl-* && rm -rf tl-*)
echo "end at $((SECONDS-start)) s"
