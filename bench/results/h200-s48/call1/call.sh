#!/usr/bin/env bash
# Session 48, call 1: Q6_K in 7 bits a weight (bench/results/h200-s47/q6k-7bit.diff, built
# in session 47 and never run: its levels' low nibbles as Q4_0's payload, a 3-word record of
# high bits and scales) instead of 9 (int8 levels). Carries ./cortiq (the diff applied),
# ./cortiq-base (HEAD ce33fc2) and ./gpu_parity (the diff applied): the matmul parity, the
# token graphs and the int8 chain's bit-equality on the K-quant shapes, then an A/B of the two
# binaries alternating in this call (tg128 after -p 512) on the Q4_K_M rows and llama-8b q4_0.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_k_m llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 240 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches int8_chain > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|q4_k|q6_k" $OUT/parity.log | head -40
echo "parity done at $((SECONDS-start)) s"
wait
mkdir -p $OUT/ab
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((520-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-8b:q4_k_m llama-1b:q4_k_m smollm2-135m:q4_k_m llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
gzip $OUT/parity.log
(cd $OUT && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
