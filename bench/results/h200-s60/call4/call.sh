#!/usr/bin/env bash
# Session 60's fourth call. Carries .gl/ and gpuab/ (`cargo build --release --features
# gpu,cuda`, stripped and gzipped): cortiq.gz and gpu_parity.gz = e903946 (Gemma's down
# projection reads tanh-GELU(gate) * up as it loads: 10 -> 9 dispatches a layer),
# cortiq-df75bc2.gz (before it). Everything lands in $OUT/out.tgz.
# 1. Gemma 3's token-graph test on the GPU.
# 2. A/B tg128 after a 512-token prompt, gemma3-270m q4_0 on wgpu, against df75bc2.
#    Prediction: 18 dispatches fewer a token at ~2.1 us each (what call 2's fusion saved per
#    dispatch) and the activation's own pass: +3-4 % (834 -> ~865 tok/s).
# 3. README's Gemma rows: bench/gpu-all.sh on cpu / wgpu / cuda (CUDA per op).
# 4. Where a Gemma token's GPU time goes: CMF_GRAPH_HOSTPROF=2, per kind of dispatch.
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call4; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0
CORTIQ_REQUIRE_GPU=wgpu timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_gemma3_token_graph_follows_the_cpu_path > $W/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "wgpu .*gemma|test result|panicked|differ" $W/gemma-test.log | cut -c1-400
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-df75bc2" BACKEND=wgpu PROMPT=512 GEN=128 REPS=2 ROUNDS=4 MODELS_DIR=$M DEADLINE=90 bash bench/ab.sh $W/ab gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=2 timeout 60 ./cortiq bench -m $M/gemma3-270m-q4_0.gguf -p 512 -n 128 -r 1 --explain > $W/gemma-hostprof.txt 2>&1
grep -v "^$" $W/gemma-hostprof.txt | tail -30
CORTIQ_BIN=./cortiq BACKENDS="cpu wgpu cuda" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=150 timeout 330 bash bench/gpu-all.sh $W/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/gemma/bench.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
