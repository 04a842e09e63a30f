#!/usr/bin/env bash
# Session 62's second call, same binaries as call 1 (cortiq-base.gz = 56a0e86, main before
# session 61). Everything lands in $OUT/out.tgz.
# 1. The rest of gpu_parity's CUDA tests (call 1 ran the Gemma, prefill-chunk, attention and
#    f16-guard tests): the prefill refactor (launch_embed, act_mul_f16) touches llama's path.
# 2. A/B llama-1b q4_0 pp512 / tg128 on cuda, this tree against 56a0e86, 4 rounds: a7dfe86's
#    window compiled out of llama's split kernel, the prefill refactor. Prediction: within
#    0.5 % both ways.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call2; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh llama-1b:q4_0
timeout 300 ./gpu_parity --test-threads 1 --nocapture --skip wgpu_ --skip gemma3 --skip prefill_graph_chunks --skip attention_matches --skip prefill_past_f16 > $W/cuda-tests.log 2>&1
echo "== parity rc $?"; grep -E "^test |test result|panicked" $W/cuda-tests.log | cut -c1-300 | tail -40
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=128 REPS=2 ROUNDS=4 MODELS_DIR=$M DEADLINE=150 bash bench/ab.sh $W/ab llama-1b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
