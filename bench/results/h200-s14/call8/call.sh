#!/usr/bin/env bash
# Session 14 call 8: the wgpu greedy pick in two passes (argmax.wgsl per 4096 logits, argmax_merge.wgsl): H200 parity (the argmax cases, the token graph, the prefill graph), tg128 greedy, the previous build (0ffc5cd: one-workgroup argmax) against this one alternating, then the wgpu table of record with this session's final build.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-prev gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 200 ./gpu_parity --test-threads 1 --nocapture wgpu_argmax token_graph_matches prefill_graph > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
wait
echo "parity done at $((SECONDS-start)) s"
grep -E "^test |exit|panicked|test result|argmax cases|graph vs CPU|queued ahead" $OUT/parity.log | head -40
BINS="./cortiq-prev ./cortiq" BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) bash bench/ab.sh $OUT/ab-tg128 smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-tg128/ab.md
rm -f $OUT/ab-tg128/ab.log
echo "a/b done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 MODELS_DIR=$M timeout $((570-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
rm -f $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
