#!/usr/bin/env bash
# Session 49, call 1: session 48's prepared call (h200-s48/next-call/call.sh, call 2's A/B
# was cut off when that session's device time ran out), run as written. Build ./cortiq-base from 3bcb308 (Q4_K as Q4_1, 5 bits) and
# ./cortiq and ./gpu_parity from the commit that made Q4_K kind 6 (4.625 bits, exact), gzip
# them into gpuab/ and carry it. The int8 chain's bit-equality (tiny q4_k_m) and the fused
# FFN test (Q4_K no longer fused), then the A/B alternating in one call, tg128 after -p 512.
# Prediction: llama-8b Q4_K_M streams 5.07 -> 4.79 GB a token, so decode up to +6 % if the
# second record copy a unit does not show (session 48's 7-bit Q6_K gave 4.4 of a predicted
# 7.5 %); llama-1b Q4_K_M about +3 %, uniform Q4_K llama-1b about +7 %.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-8b:q4_k_m llama-1b:q4_k_m llama-1b:q4_k smollm2-135m:q4_k_m
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 200 ./gpu_parity --test-threads 1 --nocapture int8_chain cuda_fused_ffn > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|q4_k|q6_k" $OUT/parity.log | head -20
echo "parity done at $((SECONDS-start)) s"
wait
mkdir -p $OUT/ab
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((520-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-8b:q4_k_m llama-1b:q4_k_m llama-1b:q4_k smollm2-135m:q4_k_m > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
gzip $OUT/parity.log
(cd $OUT && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
