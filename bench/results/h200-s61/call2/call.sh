#!/usr/bin/env bash
# Session 61's second call (same binaries as call 1, plus cortiq-base.gz = 56a0e86, main before
# this session). Everything lands in $OUT/out.tgz.
# 1. The two parity tests call 1's time limit cut: token_graph_matches_the_cpu_path,
#    weights_upload_once_and_unsupported_codecs_decline_untouched.
# 2. A/B llama-1b q4_0 tg128 after 512 on cuda, this build against 56a0e86, 4 rounds.
#    Prediction: within 0.5 % (two more kernel arguments, no new work on the llama path).
# 3. README's Gemma table on this build: cuda (the new token graph), wgpu, cpu, 3 reps.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call2; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact token_graph_matches_the_cpu_path weights_upload_once_and_unsupported_codecs_decline_untouched > $W/parity.log 2>&1
echo "== parity rc $?"; grep -E "^test |^ok|FAILED|test result|panicked" $W/parity.log | cut -c1-300 | tail -20
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=128 REPS=2 ROUNDS=4 MODELS_DIR=$M DEADLINE=90 bash bench/ab.sh $W/ab llama-1b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS="cuda wgpu cpu" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=100 timeout 200 bash bench/gpu-all.sh $W/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/gemma/bench.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
