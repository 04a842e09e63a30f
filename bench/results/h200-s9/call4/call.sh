#!/usr/bin/env bash
# Session 9 call 4: wgpu codecs without int-to-float conversions (nibbles and int8 OR-ed into the mantissa of 2^23, then one subtraction: new) vs conversions (base): kernel tables, parity, decode/prefill A/B.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-base.gz > ./cortiq-base; gunzip -c gpuab/cortiq-new.gz > ./cortiq-new; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq-base cortiq-new gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-new synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done; wait
for b in base new; do timeout 120 ./cortiq-$b gpu --kernels --bandwidth 3800 > $OUT/kernels-$b.md 2>$OUT/kernels-$b.log; done
paste -d'\n' $OUT/kernels-base.md $OUT/kernels-new.md | grep -E "^\|" | head -80
( timeout 150 ./gpu_parity --test-threads 1 --nocapture matmul_matches qkv_batch token_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|wgpu .*graph vs CPU" $OUT/parity.log | head -30
BINS="./cortiq-base ./cortiq-new" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=170 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
cat $OUT/ab/ab.md
