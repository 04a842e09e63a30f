#!/usr/bin/env bash
# Session 13 call 1: the whole parity harness at main 32027fb (wgpu + CUDA; the token-graph test in its own process beside the rest, correctness only), the s12-cuda-long-chunks branch's CUDA parity and the s12-wgpu-ahead branch's wgpu token-graph parity, all side by side; then the CUDA prompt A/B main vs long chunks (pp512, pp2048) with the GPU otherwise idle.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-main cortiq-lc cortiq-ahead gpu_parity-main gpu_parity_cuda-lc gpu_parity_wgpu-ahead; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( timeout 330 ./gpu_parity-main --test-threads 1 --nocapture token_graph > $OUT/parity-main-token.log 2>&1; echo "parity exit $?" >> $OUT/parity-main-token.log ) &
( timeout 330 ./gpu_parity-main --test-threads 1 --nocapture --skip token_graph > $OUT/parity-main-rest.log 2>&1; echo "parity exit $?" >> $OUT/parity-main-rest.log ) &
( timeout 330 ./gpu_parity_cuda-lc --test-threads 1 --nocapture prefill_graph attention > $OUT/parity-lc.log 2>&1; echo "parity exit $?" >> $OUT/parity-lc.log ) &
( timeout 330 ./gpu_parity_wgpu-ahead --test-threads 1 --nocapture token_graph device_prefix > $OUT/parity-ahead.log 2>&1; echo "parity exit $?" >> $OUT/parity-ahead.log ) &
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq-main synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "parity done at $((SECONDS-start)) s"
for f in $OUT/parity-*.log; do echo "== $f"; grep -E "^test |parity exit|panicked|test result|greedy argmax agreement|taken ahead|dropped" $f | head -30; done
BINS="./cortiq-main ./cortiq-lc" BACKEND=cuda PROMPT=512 GEN=16 REPS=2 ROUNDS=2 DEADLINE=$((450-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp512 llama-8b:q4_0 llama-1b:q4_0
cat $OUT/ab-pp512/ab.md
BINS="./cortiq-main ./cortiq-lc" BACKEND=cuda PROMPT=2048 GEN=16 REPS=2 ROUNDS=1 DEADLINE=$((560-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp2048 llama-8b:q4_0 llama-1b:q4_0
cat $OUT/ab-pp2048/ab.md
