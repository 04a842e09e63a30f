#!/usr/bin/env bash
# Session 10 call 6: CUDA o / down projections reading the residual values they add into before their programmatic-dependent-launch wait (new; the last writer of x finished before these kernels start) vs after their dot products (base): CUDA-only parity (token graph and prefill graph against the CPU), then A/B tg128 at -p 512.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-base.gz > ./cortiq-base; gunzip -c gpuab/cortiq-new.gz > ./cortiq-new; gunzip -c gpuab/gpu_parity_cuda.gz > ./gpu_parity; chmod +x cortiq-base cortiq-new gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-new synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 80 ./gpu_parity --test-threads 1 --nocapture token_graph prefill_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
grep -E "^test |parity exit|panicked|test result|graph vs CPU|prefill graph" $OUT/parity.log | head -30
BINS="./cortiq-base ./cortiq-new" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=110 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
cat $OUT/ab/ab.md
