#!/usr/bin/env bash
# Session 11 call 3: c24, co-resident row kernels: at most CMF_X_BPS blocks of a row kernel per SM (1: the next kernel's blocks fit beside this one's and issue their weight copies before their wait), with a weight ring of CMF_X_RING units a thread (an uncommitted build, diff x.diff); CUDA tg128 at -p 512, alternating. Then the wgpu table of record with int8 prompt GEMMs by default (main 82bcd36).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-x; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
BINS="./cortiq-x" BACKEND=cuda VARIANTS="CMF_X_BPS=99 CMF_X_BPS=1 CMF_X_BPS=1,CMF_X_RING=16" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=300 bash bench/ab.sh $OUT/ab-cuda llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q8_0
cat $OUT/ab-cuda/ab.md
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout 200 bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
