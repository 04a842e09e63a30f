#!/usr/bin/env bash
# Session 61's first call. Carries .gl/ and gpuab/ (`cargo build --release --features
# gpu,cuda`, stripped and gzipped): cortiq.gz and gpu_parity.gz = this session's tree (CUDA's
# Gemma 3 token graph: qkv_rows, gemma_norm_rope, windowed split attention, add_normed,
# gate_up_gelu_tanh), cortiq-base.gz = 56a0e86 (main before it).
# Everything lands in $OUT/out.tgz.
# 1. cuda_gemma3_token_graph_follows_the_cpu_path (NVRTC compiles the kernels first, ~100 s).
# 2. gpu_parity but its wgpu-only tests (the split attention and merge took a window
#    argument, the embedding a scale: the llama paths must be unchanged).
# 3. Gemma 3 on cuda (the new graph), bench/gpu-all.sh, 2 reps, and its --explain.
#    Prediction: 8 launches a layer, 18 layers + 2 = 146 launches; at ~2.5 us a launch in a
#    CUDA graph plus ~0.35 MB of weights a layer, ~0.45 ms a token: ~2000 tok/s, over twice
#    wgpu's 869 (H100) and ten times CUDA per op (186).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call1; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
timeout 240 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma-test.log | cut -c1-600
timeout 260 ./gpu_parity --test-threads 1 --nocapture --skip wgpu_ --skip gemma3 > $W/cuda-tests.log 2>&1
echo "== parity rc $?"; grep -E "^test |test result|panicked" $W/cuda-tests.log | cut -c1-300 | tail -40
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS="cuda" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=60 timeout 70 bash bench/gpu-all.sh $W/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/gemma/bench.md; echo "gemma bench at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 40 ./cortiq bench -m $M/gemma3-270m-q4_0.gguf -p 512 -n 128 -r 1 --explain > $W/gemma-explain.txt 2>&1
grep -E "token graph|prefill|tg128|pp512|Gemma" $W/gemma-explain.txt | head -12
tar czf $OUT/out.tgz -C $W .
