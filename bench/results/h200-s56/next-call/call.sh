#!/usr/bin/env bash
# Session 56's next call, not run (no H200 came after call 2). Carries in gpuab/:
#   cortiq-9f44707.gz  9f44707's build (ring prologue unrolled for every kind)
#   cortiq.gz          main's build (unrolled for the K-quant kinds 6 / 7 only, 3e3e6bc)
#   cortiq-ktile.gz    main plus ../call4/k-tile-only.diff (unrolled for kinds 6 / 7's tile
#                      kernels only, NB > 1; NVRTC 13.0's machine code has no uniform-register
#                      LDGSTS with it either)
#   gpu_parity.gz      main plus k-tile-only.diff's gpu_parity (the variant's decode kernels
#                      for kinds 6 / 7 are the ones not yet run on a GPU)
# each `cargo build --release --features gpu,cuda` (+ `cargo test ... --test gpu_parity
# --no-run`), stripped and gzipped. Runs only on an H200.
# Prediction: main over 9f44707 +2.5 % smollm2 q4_0, +1.5 % q8_0 and llama-8b q8_0 (call 2's
# step at ce22153); cortiq-ktile over main on the Q4_K_M rows by ~1-2 % if kinds 6 / 7's
# decode kernels lose to the unroll as kinds 0 / 2 did.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: stop"; exit 0 ;; esac
specs="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-8b:q8_0 llama-1b:q4_k_m llama-8b:q4_k_m"
. bench/device-start.sh $specs
(CMF_GPU=cuda ./cortiq-9f44707 gpu > $OUT/gpu-9f44707.txt 2>&1 &)
(CMF_GPU=cuda ./cortiq gpu > $OUT/gpu-main.txt 2>&1 &)
CMF_GPU=cuda ./cortiq-ktile gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_PARITY_SHAPES=tiny:q4_k_m,tiny:q5_k_m,llama-1b:q4_k_m timeout 150 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test result|panicked|codec/shape|graph vs CPU" $OUT/parity.log | cut -c1-220
gzip $OUT/parity.log
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-9f44707 ./cortiq ./cortiq-ktile" PROMPT=512 GEN=128 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab $specs > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
