#!/usr/bin/env bash
# Prepared in session 62, never run (the device budget went on refused starts): the
# prompt-chunk attention's FP32 tiles (`attention_rows_d*`, the path of Gemma 3's 256-wide
# heads) over 8 warps of 4 rows instead of 4 of 8 (`git apply
# bench/results/h200-s62/next-call/attention-rows-8warps.diff` on main; NVRTC 13.0 compiles
# it). gpuab/: cortiq.gz and gpu_parity.gz built with it, cortiq-base.gz = main without it.
# No .gl/. Ordered for little device time; everything lands in $OUT/out.tgz.
# 1. cuda_attention_matches_an_exact_softmax (a new case: 100 rows of head size 256, four
#    tiles; the first process pays the kernels' compile).
# 2. A/B Gemma 3 pp512 on cuda, three rounds alternating. Prediction: a 512-row chunk's last
#    tile walks 16 key chunks one after another in each of 64 blocks (4 heads x 16 tiles) of
#    4 warps on 132 SMs; with 8 warps of 4 rows a warp's work per key chunk halves and an SM
#    holds twice the warps, so the tile's chain about halves. If attention is ~3 ms of the
#    chunk's 6.7 ms: pp512 76.6 k -> ~90-100 k tok/s.
# 3. The Gemma token test (its prompts through the prefill graph, windows 24 and 512).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call6; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0
timeout 140 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax > $W/attention.log 2>&1
echo "== attention rc $? at $((SECONDS-start)) s"; grep -E "x 256|^ok|FAILED|test result|panicked" $W/attention.log | cut -c1-250 | tail -12
tar czf $OUT/out.tgz -C $W .
wait
BINS="./cortiq ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=32 REPS=2 ROUNDS=3 MODELS_DIR=$M DEADLINE=40 bash bench/ab.sh $W/ab gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma.log 2>&1
echo "== gemma rc $?"; grep -E "gemma|test result|panicked" $W/gemma.log | cut -c1-250 | tail -6
echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
