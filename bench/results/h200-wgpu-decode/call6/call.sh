#!/usr/bin/env bash
# Session 8 call 6: kernel parity with the wide shape; the wgpu table of record.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 100 ./gpu_parity --test-threads 1 --nocapture matmul_matches > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
CORTIQ_BIN=./cortiq BACKENDS=wgpu BANDWIDTH=3800 REPS=2 timeout 420 bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
grep -E "^test |parity exit|panicked|test result|cases matched" $OUT/parity.log | head; cat $OUT/table/bench.md
