#!/usr/bin/env bash
# Session 14 call 1: wgpu RoPE folded into the attention split and the int8 combine writing O's input: H200 parity (attention with RoPE, the quantizer, token graph, device prefix), then tg128 alternating by the switches, same binary. Keeps the real model's first part in /tmp/cq for call 2.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/cq && cp gpuab/smol.part1 /tmp/cq/ && ls -la /tmp/cq
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_attention quantiz > $OUT/parity-kernels.log 2>&1; echo "exit $?" >> $OUT/parity-kernels.log
grep -E "^test |exit|panicked|test result|RoPE" $OUT/parity-kernels.log | head -30
timeout 230 ./gpu_parity --test-threads 1 --nocapture token_graph_matches wgpu_device_prefix > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
wait
echo "parity done at $((SECONDS-start)) s"
grep -E "^test |exit|panicked|test result|agreement|worst" $OUT/parity-graph.log | head -40
BINS="./cortiq" VARIANTS="CMF_WGPU_ROPE_FOLD=0,CMF_WGPU_COMBINE_Q8=0 CMF_WGPU_COMBINE_Q8=0 CMF_WGPU_ROPE_FOLD=1" BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-tg128 smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-tg128/ab.md
rm -f $OUT/ab-tg128/ab.log
echo "done at $((SECONDS-start)) s"
