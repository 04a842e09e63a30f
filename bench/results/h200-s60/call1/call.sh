#!/usr/bin/env bash
# Session 60's first call: session 59's prepared one (bench/results/h200-s59/next-call/, never
# run: no machine came) on this session's build, plus CUDA's per-op FFN with GELU (act_mul).
# Carries .gl/ and gpuab/ (each `cargo build --release --features gpu,cuda`, stripped and
# gzipped): cortiq.gz = main, cortiq-5aee1e8.gz (no f16 guard), gpu_parity.gz = main's.
# 1. Gemma 3's wgpu prefill and token graphs against the CPU path on a discrete GPU
#    (synthesized gemma3-270m q4_0; the real file cannot be carried), and a bench of it on
#    cpu / wgpu / cuda (CUDA has no Gemma graph: per op, now with its GELU FFN on the device).
#    Prediction: wgpu tg128 several times the CPU's (~12 dispatches a layer at ~5.5 us:
#    ~1.3 ms a token, ~700 tok/s).
# 2. The per-op FFN's three activations on wgpu and CUDA (CUDA declined GELU before), then
#    the f16 guard's tests with the matrix units: wgpu, then CUDA's in the shared-body form.
# 3. A/B, pp512, eight rounds, llama-1b q4_0 on wgpu, this build against 5aee1e8. Prediction:
#    within 1 % (531c31a's form cost 3.0 % on an H100, all of it host time per chunk).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
CORTIQ_REQUIRE_GPU=wgpu timeout 150 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_gemma3_token_graph_follows_the_cpu_path > $OUT/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "wgpu .*gemma|SKIP|test result|panicked|differ" $OUT/gemma-test.log | cut -c1-400
CORTIQ_REQUIRE_GPU=wgpu timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_prefill_past_f16_range_follows_the_cpu_path > $OUT/guard-wgpu.log 2>&1
echo "== wgpu guard rc $?"; grep -E "rerun|q x 1e6|test result|panicked" $OUT/guard-wgpu.log
wait; echo "models at $((SECONDS-start)) s"
# CUDA's kernels compile here (NVRTC, ~110 s), before the bench's CUDA row uses them.
CORTIQ_REQUIRE_GPU=cuda timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact qkv_batch_and_ffn_match_the_cpu_reference > $OUT/ffn.log 2>&1
echo "== ffn rc $?"; grep -E "ffn Gelu|test result|panicked" $OUT/ffn.log | cut -c1-300 | head -20
CORTIQ_REQUIRE_GPU=cuda timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact cuda_prefill_past_f16_range_follows_the_cpu_path > $OUT/guard-cuda.log 2>&1
echo "== cuda guard rc $?"; grep -E "rerun|q x 1e6|test result|panicked" $OUT/guard-cuda.log
CORTIQ_BIN=./cortiq BACKENDS="cpu wgpu cuda" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=150 timeout 330 bash bench/gpu-all.sh $OUT/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $OUT/gemma/bench.md; echo "gemma bench at $((SECONDS-start)) s"
CMF_GPU=wgpu timeout 60 ./cortiq bench -m $M/gemma3-270m-q4_0.gguf -p 512 -n 128 -r 1 --explain > $OUT/gemma-explain.txt 2>&1
grep -E "token graph|prefill|ffn|tg128|pp512" $OUT/gemma-explain.txt | head -12
BINS="./cortiq ./cortiq-5aee1e8" BACKEND=wgpu PROMPT=512 GEN=16 REPS=3 ROUNDS=8 MODELS_DIR=$M DEADLINE=100 bash bench/ab.sh $OUT/ab llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md; echo "ab at $((SECONDS-start)) s"
