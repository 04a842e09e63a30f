#!/usr/bin/env bash
# Session 48, call 2: Q4_K as its own kind 6 (4.625 bits a weight, its scales exact: per
# unit its levels as Q4_0's payload, per superblock a 5-word record of d / dmin and the
# units' 6-bit scales and minimums) instead of Q4_1's layout (5 bits, scale products rounded
# to f16). Carries ./cortiq (the change), ./cortiq-base (HEAD 0eb021f) and ./gpu_parity (the
# change; Q4_K's matmul bound is now Q8_0's 1e-6): the matmul parity, the token and prefill
# graphs; then an A/B of the two binaries alternating in this call (tg128 after -p 512) on
# llama-1b Q4_K_M (trimmed to fit the session's device time left after failed starts).
# Ran on an H100 under a 230 s limit: the parity passed (out/), the A/B was cut off before
# its first run finished; next-call/call.sh has it.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_k_m
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 150 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|q4_k|q6_k" $OUT/parity.log | head -40
echo "parity done at $((SECONDS-start)) s"
wait
mkdir -p $OUT/ab
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((200-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_k_m > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
gzip $OUT/parity.log
(cd $OUT && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
