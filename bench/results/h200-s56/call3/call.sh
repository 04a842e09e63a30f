#!/usr/bin/env bash
# Session 56, call 3: call 2 put the -1.5 to -2.5 % between 0669216 and ce22153, whose only
# kernel change fully unrolled run_rows' ring prologue (session 51's workaround for CUDA
# 13.0's ptxas, needed by kind 7). This build unrolls it for the affine K-quant kinds (6, 7)
# only; NVRTC 13.0's machine code checked here for the miscompile's form: none.
# 1. Parity (the rolled loop for kinds 0-5, 8): matmul harness (135 cases) and the token /
#    prefill graph test on tiny q4_0 / q6_k / q5_1 / q4_k_m and smollm2 q8_0.
# 2. A/B, main (./cortiq-base, unrolled) against this build (./cortiq), tg128 after -p 512,
#    two rounds alternating. Prediction: 0669216's speeds back, smollm2 q4_0 +2.5 %, q8_0
#    +1.5 %, llama-8b q8_0 +1.5 %; llama-1b and llama-8b q4_0 not measured in call 2.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
specs="smollm2-135m:q4_0 llama-8b:q8_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0"
. bench/device-start.sh $specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_PARITY_SHAPES=tiny:q4_0,tiny:q6_k,tiny:q5_1,tiny:q4_k_m,smollm2-135m:q8_0 timeout 200 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test result|panicked|codec/shape|graph vs CPU" $OUT/parity.log | cut -c1-220
gzip $OUT/parity.log
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq" PROMPT=512 GEN=128 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab $specs > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
