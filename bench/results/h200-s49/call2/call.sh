#!/usr/bin/env bash
# Session 49, call 2. Call 1 measured kind 6 (Q4_K exact, 4.625 bits) slower than Q4_1's
# layout on the H200 (llama-8b Q4_K_M -3.9 %, llama-1b q4_k -2.4 %) although it streams
# fewer bytes: its ring slot took two 4-byte record copies a lane where Q4_1 takes one, and
# Q6_K's three. This build copies a warp's records whole (they lie contiguous for its 32
# units): Q6_K's 96 words by 24 lanes' 16-byte copies, Q4_K's 4 superblocks' 20 words by 20
# lanes' 4-byte copies; `take` gathers them (warp sync, as Q8_0). Carries ./cortiq-q41
# (3bcb308: Q4_K as Q4_1), ./cortiq-base (31f38c7: kind 6 as landed), ./cortiq and
# ./gpu_parity (this build). Parity first (the matmul harness, the token / prefill graphs,
# the int8 chain bit for bit), then the three binaries alternating, tg128 after -p 512.
# Prediction: the copy instructions a warp issues for 32 units drop from 3 to 2 on Q4_K and
# from 4 to 2 on Q6_K (as Q4_0's and Q4_1's), so kind 6 at least matches Q4_1's layout (+2-4 %
# over 31f38c7 on llama-8b Q4_K_M and llama-1b q4_k), and Q6_K's share gains on top.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-8b:q4_k_m llama-1b:q4_k_m llama-1b:q4_k smollm2-135m:q4_k_m
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 150 ./gpu_parity --test-threads 1 --nocapture matmul_matches token_graph_matches > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
timeout 150 ./gpu_parity --test-threads 1 --nocapture int8_chain >> $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|codec/shape cases|first differing step Some" $OUT/parity.log | head -30
echo "parity done at $((SECONDS-start)) s"
wait
mkdir -p $OUT/ab
BINS="./cortiq-q41 ./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-8b:q4_k_m llama-1b:q4_k_m llama-1b:q4_k smollm2-135m:q4_k_m > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
gzip $OUT/parity.log
(cd $OUT && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
