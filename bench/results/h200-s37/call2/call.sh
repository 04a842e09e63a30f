#!/usr/bin/env bash
# Session 37, call 2: two launch shapes, each a switch of one binary. CMF_X_MERGE_ONE_GROUP:
# the merge kernel in one group of head_dim threads where the graph's context is at most 16
# chunks (one round of loads either way; session 23 measured 2-warp blocks ~2 % faster than
# the landed 8 at -p 512). CMF_X_HEAD_R: the head's rows per warp group (landed 4: 128256 rows
# in 32064 groups over 3168 warps, 384 warps taking 11 and the rest 10). Parity with both,
# the A/B, then llama-1b q4_0's timeline for the base and both.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
T="token_graph_matches_the_cpu_path"
CMF_X_MERGE_ONE_GROUP=1 CMF_X_HEAD_R=2 timeout 150 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst)" $OUT/parity.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_MERGE_ONE_GROUP=1 CMF_X_HEAD_R=2 CMF_X_HEAD_R=1 CMF_X_MERGE_ONE_GROUP=1,CMF_X_HEAD_R=2" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((450-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
for v in base both; do
  if [ $v = both ]; then export CMF_X_MERGE_ONE_GROUP=1 CMF_X_HEAD_R=2; fi
  CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 50 bash bench/timeline.sh $OUT/timeline-$v llama-1b:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|head) "
  rm -f $OUT/timeline-$v/*.gz $OUT/timeline-$v/*.bin
done
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
