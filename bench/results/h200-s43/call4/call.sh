#!/usr/bin/env bash
# Session 43, call 4: README's table on the f16-mirror build (call 3's binary), the fused-FFN
# test with its greedy-token criterion relative to the two launches, the token graph against
# the CPU, and A/B against cortiq-main (14e30dc) on the rows call 3 did not cover (llama-8b
# q8_0 after -p 512, smollm2 q4_0 after -p 4096, where it groups heads).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
cat $OUT/table/bench.md
echo "table done at $((SECONDS-start)) s"
timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_fused_ffn token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|fused FFN vs|cuda .*graph vs CPU" $OUT/parity.log | head -20
echo "parity done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq-main ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((470-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
BINS="./cortiq-main ./cortiq" BACKEND=cuda PROMPT=4096 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((530-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p4096 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/p4096/ab.md
(cd $OUT && gzip parity.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
