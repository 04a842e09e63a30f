#!/usr/bin/env bash
# Session 62's first call: Gemma 3's CUDA prefill graph (bench/results/h200-s61/next-call/
# gemma-prefill.diff applied on c7ba2ff: cuBLAS GEMMs, gemma_norm_rope over the rows, the FP32
# tiled prompt attention with a sliding window, add_normed over the rows, act_mul_f16 with
# tanh-GELU), and RoPE's angle and pair rule in two shared device functions (rope_rotation,
# rope_dims: RopeQkvMap, gemma_norm_rope, the cluster kernel). Carries gpuab/ (cortiq.gz,
# gpu_parity.gz of that tree; cortiq-base.gz = 56a0e86) and no .gl/: wgpu finds no adapter,
# its shapes SKIP. Everything lands in $OUT/out.tgz.
# 1. cuda_gemma3_token_graph_follows_the_cpu_path (its prompt now through the prefill graph;
#    NVRTC compiles the kernels first, ~100 s), prefill_graph_chunks_match_the_cpu_prefill
#    (Gemma on cuda added), the attention test and the f16 guard test (act_mul_f16).
# 2. Gemma 3 pp512 / tg128 on cuda. Prediction: per chunk of 512 rows, 18 layers x (5 cuBLAS
#    GEMMs over ~0.3 GFLOP + 4 dequants + ~6 glue launches) ~ 40-60 us a layer: ~1 ms, with
#    the 94 MB head once: pp512 ~15-25 k tok/s (wgpu 22 k; per op 958).
set -u
cd "$(dirname "$0")/../../../.."
W=/tmp/call1; mkdir -p $W
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu" | tee $W/card.txt
. bench/device-start.sh gemma3-270m:q4_0 llama-1b:q4_0
timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact cuda_gemma3_token_graph_follows_the_cpu_path > $W/gemma-test.log 2>&1
echo "== gemma test rc $?"; grep -E "cuda .*gemma|test result|panicked|differ|not the" $W/gemma-test.log | cut -c1-600
timeout 100 ./gpu_parity --test-threads 1 --nocapture --exact prefill_graph_chunks_match_the_cpu_prefill > $W/prefill.log 2>&1
echo "== prefill chunks rc $?"; grep -E "gemma|test result|panicked" $W/prefill.log | cut -c1-300 | tail -16
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS="cuda" BANDWIDTH=$(case "$gpu" in *H200*) echo 4350 ;; *) echo 3350 ;; esac) REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=40 timeout 50 bash bench/gpu-all.sh $W/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $W/gemma/bench.md; echo "gemma bench at $((SECONDS-start)) s"
timeout 60 ./gpu_parity --test-threads 1 --nocapture --exact cuda_attention_matches_an_exact_softmax cuda_prefill_past_f16_range_follows_the_cpu_path > $W/att-guard.log 2>&1
echo "== attention + guard rc $?"; grep -E "^test |^ok|FAILED|test result|panicked" $W/att-guard.log | cut -c1-300 | tail -8
echo "end at $((SECONDS-start)) s"
tar czf $OUT/out.tgz -C $W .
