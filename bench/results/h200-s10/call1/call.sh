#!/usr/bin/env bash
# Session 10 call 1: H200 parity of the ninth session's review mends (HEAD 37da564: every gpu_parity test, CUDA and wgpu), then the wgpu token graph with int8 activations (CMF_WGPU_INT8=1) against f32 (=0), one binary, alternating per shape.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 300 ./gpu_parity --test-threads 1 --nocapture > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
grep -E "^test |parity exit|panicked|test result" $OUT/parity.log | head -40
BINS=./cortiq BACKEND=wgpu VARIANTS="CMF_WGPU_INT8=0 CMF_WGPU_INT8=1" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=230 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 llama-8b:q8_0
cat $OUT/ab/ab.md; cat $OUT/ab/ab-runs.txt
