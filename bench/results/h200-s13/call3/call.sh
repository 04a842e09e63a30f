#!/usr/bin/env bash
# Session 13 call 3: main with both branches landed plus the sampler's top-k on the device (CUDA topk.cu): the whole parity harness (token graph in its own process beside the rest; the new cuda_top_k test among the rest), the six table models synthesized meanwhile; then sampled decode (bench --sample, tg128) 32027fb (whole logits back) vs the new binary (top-40 candidates back), CUDA and wgpu, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-main cortiq-new gpu_parity-new; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( timeout 300 ./gpu_parity-new --test-threads 1 --nocapture token_graph > $OUT/parity-token.log 2>&1; echo "parity exit $?" >> $OUT/parity-token.log ) &
( timeout 300 ./gpu_parity-new --test-threads 1 --nocapture --skip token_graph > $OUT/parity-rest.log 2>&1; echo "parity exit $?" >> $OUT/parity-rest.log ) &
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq-new synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "parity done at $((SECONDS-start)) s"
for f in $OUT/parity-*.log; do echo "== $f"; grep -E "^test |parity exit|panicked|test result|greedy argmax agreement|top-k cases|taken" $f | head -30; done
BINS="./cortiq-main ./cortiq-new" BACKEND=cuda BENCH_ARGS=--sample PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((400-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sample-cuda smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-sample-cuda/ab.md
BINS="./cortiq-main ./cortiq-new" BACKEND=wgpu BENCH_ARGS=--sample PROMPT=64 GEN=128 REPS=2 ROUNDS=1 DEADLINE=$((520-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sample-wgpu smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-sample-wgpu/ab.md
echo "done at $((SECONDS-start)) s"
