#!/usr/bin/env bash
# Session 41, call 3: README's table on main's build (515b2fe: the weight copies evict-first
# compiled in), twice, so the table's spread across runs is on record.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
for t in table table2; do
  CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/gpu-all.sh $OUT/$t > /dev/null 2>&1
  cat $OUT/$t/bench.md
  echo "$t done at $((SECONDS-start)) s"
done
(cd $OUT && tar czf table.tgz table table2 && rm -rf table table2)
echo "end at $((SECONDS-start)) s"
