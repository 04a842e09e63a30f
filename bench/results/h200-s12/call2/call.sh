#!/usr/bin/env bash
# Session 12 call 2: the prefill graph on cuBLAS f16 GEMMs behind a dequant step (new default) vs the int8 tensor-core GEMMs (CMF_CUDA_CUBLAS=0), same binary, alternating; CUDA parity suite (both paths in the prefill test); `cortiq gpu` status line.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity_cuda; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1; done; touch $M/done ) &
( timeout 200 ./gpu_parity_cuda --test-threads 1 --nocapture > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|FAIL|prefill graph" $OUT/parity.log | head -60
echo "parity done at $((SECONDS-start)) s"
./cortiq gpu 2>&1 | grep -iE "prompt|kernels|cuda" | head -8
while [ ! -f $M/done ]; do sleep 2; done
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_CUDA_CUBLAS=0 CMF_CUDA_CUBLAS=1" BACKEND=cuda PROMPT=512 GEN=16 REPS=2 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0
cat $OUT/ab-pp/ab.md
