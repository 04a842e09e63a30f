#!/usr/bin/env bash
# Session 56, call 5 (the device time left, ~300 s): 3e3e6bc's prologue change on the H200,
# where call 2 found the unroll's cost (call 3 ran on an H100). ./cortiq-base is 9f44707's
# build (unrolled for every kind), ./cortiq main's (unrolled for kinds 6 / 7 only); both
# compile their kernels at once, then tg128 after -p 512 alternating, two rounds.
# Prediction: smollm2 q4_0 +2.5 %, q8_0 +1.5 % (call 2's step at ce22153). Runs only on an H200.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: stop"; exit 0 ;; esac
specs="smollm2-135m:q4_0 smollm2-135m:q8_0"
. bench/device-start.sh $specs
(CMF_GPU=cuda ./cortiq-base gpu > $OUT/gpu-base.txt 2>&1 &)
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
while pgrep -f "cortiq-base gpu" > /dev/null; do sleep 1; done
wait; echo "compiled at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq" PROMPT=512 GEN=128 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((200-(SECONDS-start))) bash bench/ab.sh $OUT/ab $specs > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
