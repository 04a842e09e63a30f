#!/usr/bin/env bash
# Session 11 call 2: H200 parity of c23 (grouped-query split attention: one block per KV head and position chunk for up to 4 query heads; the merge without block barriers) and of the wgpu int8 prompt GEMMs by default; then A/B, base (main 6a69266) vs new, CUDA tg128 at -p 512; wgpu smollm2 prompt int8 vs f32.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-base gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 250 ./gpu_parity --test-threads 1 --nocapture cuda_attention token_graph prefill_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
grep -E "^test |parity exit|panicked|test result|FAIL|cuda attention" $OUT/parity.log | head -50
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=200 bash bench/ab.sh $OUT/ab-cuda smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0
cat $OUT/ab-cuda/ab.md
BINS=./cortiq BACKEND=wgpu VARIANTS="CMF_WGPU_PREFILL_INT8=0 CMF_WGPU_PREFILL_INT8=1" PROMPT=512 GEN=8 REPS=2 ROUNDS=2 DEADLINE=60 bash bench/ab.sh $OUT/ab-pp smollm2-135m:q4_0
cat $OUT/ab-pp/ab.md
