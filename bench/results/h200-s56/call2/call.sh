#!/usr/bin/env bash
# Session 56, call 2: where did smollm2's -2 % and llama-8b q8_0's -1.4 % (session 55's H200
# re-read against README's session-47 table) come from? Four builds alternating in one call
# (bench/ab.sh, tg128 after -p 512, two rounds): 0a2031b (session 47's table), 0669216
# (session 50, before the ring prologue was unrolled), ce22153 (the unrolled prologue,
# CUDA 13.0's ptxas workaround: it touches every row kernel), main (9f44707).
# Prediction: if a build step is to blame, the tg128 step is between 0669216 and ce22153.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
specs="smollm2-135m:q4_0 llama-8b:q8_0 smollm2-135m:q8_0"
. bench/device-start.sh $specs
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-0a2031b ./cortiq-0669216 ./cortiq-ce22153 ./cortiq" PROMPT=512 GEN=128 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab $specs > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
