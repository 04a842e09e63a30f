#!/usr/bin/env bash
# Session 13 call 7: the int8 token graph's matvecs quantizing their input as they load it (Variant::q8, no quantize dispatches before o and down, nor before qkv / gate-up below 4096 columns): wgpu token-graph parity, then tg128 CMF_WGPU_FUSED_Q8=0 / 1 and the f32 graph (CMF_WGPU_INT8=0) alternating on the int8-graph models; then the wgpu table with the new default.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-q8 gpu_parity-q8; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( timeout 200 ./gpu_parity-q8 --test-threads 1 --nocapture wgpu_token_graph token_graph_matches > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log ) &
for s in llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0 llama-8b:q8_0; do ./cortiq-q8 synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "parity done at $((SECONDS-start)) s"
grep -E "test result|parity exit|panicked|wgpu .*agreement" $OUT/parity.log | head -20
BINS="./cortiq-q8" VARIANTS="CMF_WGPU_FUSED_Q8=0 CMF_WGPU_FUSED_Q8=1 CMF_WGPU_INT8=0" BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((420-(SECONDS-start))) bash bench/ab.sh $OUT/ab-tg128 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-tg128/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq-q8 BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout $((575-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
rm -f $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
