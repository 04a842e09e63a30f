#!/usr/bin/env bash
# Session 12 call 6: the wgpu int8 prompt GEMM with several 32-value units per K stage and the next stage's words prefetched into registers (CMF_WGPU_GEMM_UNITS=1 is the old loop's shape, 4 the new default on this card): wgpu parity (int8 kernels, prefill graph) on the H200, pp512 A/B in one process per run alternating, then the wgpu table of record as time allows.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1; done; touch $M/done ) &
( timeout 150 ./gpu_parity --test-threads 1 --nocapture wgpu_int8 prefill_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|cases matched|wgpu .*chunks 256 \+ rest" $OUT/parity.log | head -20
echo "parity done at $((SECONDS-start)) s"
while [ ! -f $M/done ]; do sleep 2; done
BINS="./cortiq" VARIANTS="CMF_WGPU_GEMM_UNITS=1 CMF_WGPU_GEMM_UNITS=2 CMF_WGPU_GEMM_UNITS=4" BACKEND=wgpu PROMPT=512 GEN=16 REPS=2 ROUNDS=1 DEADLINE=$((300-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0
cat $OUT/ab-pp/ab.md
echo "ab done at $((SECONDS-start)) s"
left=$((555-(SECONDS-start)))
[ $left -gt 120 ] && { CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout $left bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md; }
