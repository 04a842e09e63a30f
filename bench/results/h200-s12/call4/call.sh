#!/usr/bin/env bash
# Session 12 call 4: the prompt chunk's attention on the tensor cores (flash.cu, new default) vs the FP32 tiled kernel (CMF_CUDA_FLASH=0), and cuBLAS vs int8 GEMMs (CMF_CUDA_CUBLAS=0), same binary, alternating, with the bench's new full-prompt warm-up; CUDA parity of attention, prefill and token graph first.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity_cuda; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1; done; touch $M/done ) &
( timeout 170 ./gpu_parity_cuda --test-threads 1 --nocapture attention prefill_graph token_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|attention .* rows ending|relative L2 .*bound" $OUT/parity.log | grep -vE "rows ending at position [0-9]+: relative L2 [0-9.e-]+$" | head -40
grep -E "cuda attention .*(130|256|64|2) rows" $OUT/parity.log | head -8
echo "parity done at $((SECONDS-start)) s"
while [ ! -f $M/done ]; do sleep 2; done
BINS="./cortiq" VARIANTS="CMF_CUDA_FLASH=0 CMF_CUDA_FLASH=1 CMF_CUDA_CUBLAS=0" BACKEND=cuda PROMPT=512 GEN=16 REPS=2 ROUNDS=2 DEADLINE=$((430-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp512 llama-8b:q4_0 smollm2-135m:q4_0 llama-1b:q4_0
cat $OUT/ab-pp512/ab.md
BINS="./cortiq" VARIANTS="CMF_CUDA_FLASH=0 CMF_CUDA_FLASH=1" BACKEND=cuda PROMPT=2048 GEN=16 REPS=2 ROUNDS=1 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp2048 llama-8b:q4_0 llama-1b:q4_0
cat $OUT/ab-pp2048/ab.md
