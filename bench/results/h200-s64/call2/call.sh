#!/usr/bin/env bash
# Session 64, call 2 (any card). gpuab/: cortiq-base.gz, gpu_parity-base.gz = main (cfce4c6);
# cortiq-split.gz, gpu_parity.gz = main + the prompt attention's keys split into pieces where
# few tiles leave SMs idle (split.diff); cortiq-both.gz, gpu_parity-both.gz = that + session
# 63's flash-ldmatrix-v.diff (V as rows, B fragments by ldmatrix.x2.trans).
# 1. cuda_attention_matches_an_exact_softmax on both test builds (split, unsplit, FP32 tiles,
#    windows), the Gemma token test (its 532-token prompt takes the split prefill).
# 2. A/B pp512 (tg32), two rounds: Gemma 3 (4 heads x 8 tiles = 32 blocks on 132 SMs; split:
#    128-key pieces, the longest block 4 key chunks instead of 16; prediction pp512 123 k ->
#    ~165 k, +ldmatrix ~175 k), llama-1b q4_0 (not split; ldmatrix within 2 %).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call2; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
(CMF_GPU=cuda timeout 300 ./cortiq-base gpu > $W/base-gpu.txt 2>&1 &)
timeout 240 ./gpu_parity-both --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax > $W/attention-both.log 2>&1 &
both=$!
timeout 240 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax > $W/attention.log 2>&1
echo "== attention (split) rc $? at $((SECONDS-start)) s"; grep -E "^cuda (attention|unsplit).*(x 256|x 64, 67|window)|FAILED|test result|panicked" $W/attention.log | cut -c1-200 | tail -14
timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma.log 2>&1
echo "== gemma rc $? at $((SECONDS-start)) s"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma.log | cut -c1-400 | tail -6
wait $both; echo "== attention (both) at $((SECONDS-start)) s"; grep -E "^cuda (attention|unsplit).*(x 256|x 64, 67)|FAILED|test result|panicked" $W/attention-both.log | cut -c1-200 | tail -8
tar czf $OUT/out.tgz -C $W .
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-split ./cortiq-both ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=32 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((575-(SECONDS-start))) bash bench/ab.sh $W/ab gemma3-270m:q4_0 llama-1b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
