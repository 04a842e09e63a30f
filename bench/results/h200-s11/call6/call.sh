#!/usr/bin/env bash
# Session 11 call 6: c26, lane-staged activations: where one activation row's units fit one sweep of a warp (cols <= 1024: smollm2's qkv, o, gate/up and head), each lane quantizes its own unit in registers (RMS norm summed by the warp) instead of the block staging x in shared memory behind barriers. A/B base (main 96cbedd) vs new, tg128 at -p 512; then CUDA parity of the new build (CUDA-only parity binary).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-base gpu_parity_cuda; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=140 bash bench/ab.sh $OUT/ab-cuda smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0
cat $OUT/ab-cuda/ab.md
( timeout 110 ./gpu_parity_cuda --test-threads 1 --nocapture > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|FAIL|cuda " $OUT/parity.log | head -40
