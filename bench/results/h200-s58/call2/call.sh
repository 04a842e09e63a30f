#!/usr/bin/env bash
# Session 58, call 2 (call 1's H100, warm): issue 7's evidence on a GPU again, .gl/ carried
# (gpu-env.sh unpacks the Vulkan loader): bench/gpu-wgpu.sh (parity, kernels, explain, graph
# split), then the wgpu table by bench/gpu-all.sh (README's six rows, REPS=2).
set -u
cd "$(dirname "$0")/../../../.."
table="smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0"
. bench/device-start.sh $table
nvidia-smi --query-gpu=name --format=csv,noheader
wait; echo "models at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu BANDWIDTH=3350 REPS=2 MODELS_DIR=$M BENCH_TIMEOUT=90 timeout 300 bash bench/gpu-all.sh $OUT/table $table > /dev/null 2>&1
cat $OUT/table/bench.md; echo "table at $((SECONDS-start)) s"
tar czf $OUT/table-logs.tgz -C $OUT/table $(cd $OUT/table && ls *.log) && rm $OUT/table/*.log
CORTIQ_BIN=./cortiq PARITY_BIN=./gpu_parity BANDWIDTH=3350 MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/gpu-wgpu.sh $OUT/wgpu > $OUT/wgpu.out 2>&1
echo "wgpu-all rc $? at $((SECONDS-start)) s"; grep -E "test result|exit|tg128|token graph" $OUT/wgpu.out | head -30
gzip $OUT/wgpu/*.log 2>/dev/null; echo "end at $((SECONDS-start)) s"
