#!/usr/bin/env bash
# Session 38, call 3: where the fused FFN's time goes (call 2: llama-1b q4_0 -7 %, llama-8b
# q4_0 -13 %, smollm2 q4_0 +1.4 %). Its parity with the test's bound for llama-8b corrected
# (and tiny-wide, which call 2 never reached); then on llama-1b / llama-8b q4_0 the base, the
# fused FFN, the fused FFN without its adds into the pending part (CORTIQ_FFN_NO_REDUCE:
# outputs wrong, the reduction's price) and without its L2 prefetch of the down columns;
# then smollm2 in its three codecs, base against fused.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q4_1 smollm2-135m:q8_0 llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_fused_ffn_matches_the_cpu_path > $OUT/parity.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*fused FFN vs CPU" $OUT/parity.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
F=CMF_CUDA_FFN_FUSED=1
BINS="./cortiq" VARIANTS="CMF_NONE=1 $F $F,CMF_CUDA_DEFINES=CORTIQ_FFN_NO_REDUCE $F,CMF_CUDA_DEFINES=CORTIQ_FFN_NO_PREFETCH" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=1 \
  DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 $F" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((470-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab-small smollm2-135m:q4_0 smollm2-135m:q4_1 smollm2-135m:q8_0 > /dev/null 2>&1
cat $OUT/ab-small/ab.md
rm -f $OUT/ab/ab-runs.txt $OUT/ab-small/ab-runs.txt $OUT/ab/ab.log $OUT/ab-small/ab.log
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
