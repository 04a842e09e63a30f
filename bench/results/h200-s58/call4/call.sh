#!/usr/bin/env bash
# Session 58, call 4 (call 3's H100, warm): the guard's pp512 cost again on llama-1b q4_0,
# three rounds (call 3's two: -3.9 %). The command as run (one line):
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0; wait; BINS="./cortiq-5aee1e8 ./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=2 ROUNDS=3 MODELS_DIR=$M DEADLINE=150 bash bench/ab.sh $OUT/ab llama-1b:q4_0 > /dev/null 2>&1; cat $OUT/ab/ab-runs.txt; cat $OUT/ab/ab.md; echo "end at $((SECONDS-start)) s"
# Output: out/ab/ (5aee1e8 21968 / 21360 / 20866, guard 20811 / 21114 / 20775).
