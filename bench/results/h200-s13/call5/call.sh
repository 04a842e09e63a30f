#!/usr/bin/env bash
# Session 13 call 5: the wgpu token graph's Q/K/V and gate/up as one dispatch each (multi.rs): wgpu token-graph parity on the H200, then tg128 CMF_WGPU_MULTI=0 vs 1, same binary, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-multi gpu_parity-multi; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( timeout 250 ./gpu_parity-multi --test-threads 1 --nocapture wgpu_token_graph token_graph_matches wgpu_device_prefix > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log ) &
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 llama-1b:q8_0; do ./cortiq-multi synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "parity done at $((SECONDS-start)) s"
grep -E "^test |parity exit|panicked|test result|wgpu .*(agreement|relative)" $OUT/parity.log | head -40
BINS="./cortiq-multi" VARIANTS="CMF_WGPU_MULTI=0 CMF_WGPU_MULTI=1" BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((520-(SECONDS-start))) bash bench/ab.sh $OUT/ab-tg128 smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-tg128/ab.md
echo "done at $((SECONDS-start)) s"
