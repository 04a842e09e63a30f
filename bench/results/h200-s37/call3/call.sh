#!/usr/bin/env bash
# Session 37, call 3: the head's row groups claimed (CMF_X_HEAD_CLAIM: each warp takes the next
# group from a counter embed_row zeroes, lane 0 claiming one group ahead) instead of warp w
# taking groups w, w + warps, ... (call 2's base timeline: the head's blocks all hold the same
# work yet end between 30.1 and 40.6 us). Parity with it (and with R = 2), the A/B, then
# llama-1b q4_0's timeline with it.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
T="token_graph_matches_the_cpu_path"
for v in "CMF_X_HEAD_CLAIM=1" "CMF_X_HEAD_CLAIM=1 CMF_X_HEAD_R=2"; do
  env $v timeout 70 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
  echo "parity $v: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst)" $OUT/parity.log | head -6
done
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_HEAD_CLAIM=1 CMF_X_HEAD_CLAIM=1,CMF_X_HEAD_R=2" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=3 \
  DEADLINE=$((440-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CMF_X_HEAD_CLAIM=1 CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 50 bash bench/timeline.sh $OUT/timeline llama-1b:q4_0 | grep -E "^#|^\| (head) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
