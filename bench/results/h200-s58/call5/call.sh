#!/usr/bin/env bash
# Session 58, call 5 (the same H100): eight rounds, the guard build first in each (against
# call 3 and 4's order). The command as run (one line):
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0; wait; BINS="./cortiq ./cortiq-5aee1e8" BACKEND=wgpu PROMPT=512 GEN=16 REPS=3 ROUNDS=8 MODELS_DIR=$M DEADLINE=120 bash bench/ab.sh $OUT/ab llama-1b:q4_0 > /dev/null 2>&1; cat $OUT/ab/ab-runs.txt; cat $OUT/ab/ab.md; echo "end at $((SECONDS-start)) s"
# Output: out/ab/ (pp512 mean of rounds: guard 20932, 5aee1e8 21572; 5aee1e8 ahead in all 8).
