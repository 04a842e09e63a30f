#!/usr/bin/env bash
# Session 18 call 5: the wgpu table's smollm2 q4_0 row again (call 4's had one slow repetition: 724 +- 162), then sampled tg128 (--sample) after a 512-token prompt on the int8 graphs with this session's unit-writing kernels off (CMF_WGPU_GLU_Q8=0, CMF_WGPU_NORM_Q8=0) and on, alternating in one binary.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 MODELS_DIR=$M bash bench/gpu-all.sh $OUT/table-wgpu-smollm2 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/table-wgpu-smollm2/bench.md
rm -f $OUT/table-wgpu-smollm2/*.log
VARIANTS="CMF_WGPU_GLU_Q8=0,CMF_WGPU_NORM_Q8=0 CMF_WGPU_GLU_Q8=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 BENCH_ARGS="--sample" DEADLINE=$((240-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sampled llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-sampled/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
