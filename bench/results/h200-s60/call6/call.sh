#!/usr/bin/env bash
# Session 60's sixth call. Carries .gl/ and gpuab/ (`cargo build --release --features
# gpu,cuda`, stripped and gzipped): cortiq.gz and gpu_parity.gz = 70e957b (Gemma's q/k head
# norms, RoPE and append inside the attention split under CMF_WGPU_ROPE_FOLD, on by default:
# 9 dispatches a layer; with it off, norm_rope.wgsl before the plain split: 10).
# Everything lands in $OUT/out.tgz.
# 1. Gemma 3's token-graph test on the GPU (the fold path).
# 2. A/B in one binary, fold on vs off, tg128 after a 512-token prompt, gemma3-270m q4_0.
#    Prediction: 18 dispatches fewer a token at ~2.1 us each (call 2's saving per dispatch),
#    less the split's two extra reductions: +2-4 % (829 -> ~850-860 tok/s).
# 3. README's wgpu Gemma row again on this build (bench/gpu-all.sh, wgpu only, three reps).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call6; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0
CORTIQ_REQUIRE_GPU=wgpu timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_gemma3_token_graph_follows_the_cpu_path > $W/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "wgpu .*gemma|test result|panicked|differ" $W/gemma-test.log | cut -c1-400
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_WGPU_ROPE_FOLD=1 CMF_WGPU_ROPE_FOLD=0" BACKEND=wgpu PROMPT=512 GEN=128 REPS=2 ROUNDS=4 MODELS_DIR=$M DEADLINE=80 bash bench/ab.sh $W/ab gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/ab/ab.md; echo "ab at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS="wgpu" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=100 timeout 150 bash bench/gpu-all.sh $W/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/gemma/bench.md; echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
