#!/usr/bin/env bash
# Session 33, call 2: which spread launches pay now that they cost the next kernel its early
# entry (down's two blocks an SM hold ~152 KB, so one ~46 KB qkv block an SM enters before down
# ends). One binary, the landed build + `nospread-knob.diff` (CMF_X_NOSPREAD lists the stages
# launched at their staged shared memory): A/B of none / down / o / o,down / qkv, then block
# timelines (with the early / late entry table) of llama-8b q4_0 base and without down's spread.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_NOSPREAD=down CMF_X_NOSPREAD=o CMF_X_NOSPREAD=o,down CMF_X_NOSPREAD=qkv" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((430-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline-base llama-8b:q4_0 llama-8b:q8_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
CMF_X_NOSPREAD=down CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 40 bash bench/timeline.sh $OUT/timeline-nodown llama-8b:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline-*/*.gz $OUT/timeline-*/*.bin
(cd $OUT && tar czf timeline.tgz timeline-* && rm -rf timeline-*)
echo "end at $((SECONDS-start)) s"
