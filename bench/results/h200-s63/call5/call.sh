#!/usr/bin/env bash
# Session 63, call 5: call 4's tensor-core prompt attention with each key chunk's K / V
# loads issued while the chunk before it is scored (registers: h256 180 -> 254, h128 ->
# 240, h64 -> 152, no spills, NVRTC 13.0 sm_90). Call 4's ncu put flash_rows_h256 at 137 us
# a layer, ~8.6 us a key chunk for the last tile: a chain of 8 dependent load rounds a
# chunk. gpuab/: cortiq.gz (this), cortiq-w.gz and gpu_parity.gz (this, with the window
# compiled out of the kernels of layers without one: flash_rows_h* for those, flash_window_h*
# for sliding-window layers; call 4 had llama-1b's pp512 at -2.2 % against main),
# cortiq-c4.gz (call 4's), cortiq-base.gz (6c6e819, before call 4's). Everything lands in
# $OUT/out.tgz.
# 1. The attention test and the Gemma token test (cortiq-w's tree).
# 2. A/B pp512 on cuda, four binaries, two rounds: Gemma 3 (prediction: the attention
#    137 -> ~40 us a layer, pp512 ~122 k -> ~160 k), llama-1b q4_0 and llama-8b q4_0
#    (occupancy of the 128-wide kernel 3 -> 2 blocks an SM: unknown sign).
# 3. README's Gemma cuda row by bench/gpu-all.sh for this build and call 4's; ncu over one
#    Gemma bench.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call5; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0 llama-8b:q4_0
timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax > $W/attention.log 2>&1
echo "== attention rc $? at $((SECONDS-start)) s"; grep -E "^cuda attention .*(x 256|window)|FAILED|test result|panicked" $W/attention.log | cut -c1-250 | tail -12
timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma.log 2>&1
echo "== gemma rc $? at $((SECONDS-start)) s"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma.log | cut -c1-400 | tail -6
tar czf $OUT/out.tgz -C $W .
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-w ./cortiq ./cortiq-c4 ./cortiq-base" BACKEND=cuda PROMPT=512 GEN=32 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((480-(SECONDS-start))) bash bench/ab.sh $W/ab gemma3-270m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
for bin in cortiq-w cortiq cortiq-c4; do CORTIQ_BIN=./$bin BACKENDS=cuda BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=40 bash bench/gpu-all.sh $W/gemma-$bin gemma3-270m:q4_0 > /dev/null 2>&1; rm -f $W/gemma-$bin/*.log; grep gemma3 $W/gemma-$bin/bench.md; done
CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout $((575-(SECONDS-start))) ncu --metrics gpu__time_duration.sum --csv ./cortiq-w bench -m $M/gemma3-270m-q4_0.gguf -p 512 -n 2 -r 1 --backend cuda > $W/ncu.csv 2>$W/ncu.err
gzip $W/ncu.csv; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
