#!/usr/bin/env bash
# Session 49, call 3: README's table on the build that landed as 9e57397 (./cortiq): the six
# shapes of issue 8 and the Q4_K_M rows, in one run; then, while time is left, call 2's A/B
# of Q4_K as Q4_1's layout (./cortiq-q41, 3bcb308) against it on this call's card.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-1b:q4_k
BIN=${BIN:-./cortiq}
CMF_GPU=cuda $BIN gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=$BIN BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=120 bash bench/gpu-all.sh $OUT/table \
  smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m > /dev/null 2>&1
cat $OUT/table/bench.md
echo "table at $((SECONDS-start)) s"
left=$((560-(SECONDS-start)))
if [ $left -gt 120 ]; then
  mkdir -p $OUT/ab
  BINS="./cortiq-q41 ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$left MODELS_DIR=$M \
    bash bench/ab.sh $OUT/ab/p512 llama-8b:q4_k_m llama-1b:q4_k > /dev/null 2>&1
  cat $OUT/ab/p512/ab.md
  (cd $OUT && tar czf ab.tgz ab && rm -rf ab)
fi
echo "end at $((SECONDS-start)) s"
