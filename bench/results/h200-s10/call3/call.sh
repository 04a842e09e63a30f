#!/usr/bin/env bash
# Session 10 call 3: the persistent CUDA token kernel without the 2-blocks-per-SM register cap (255 registers, no spills, one block per SM; call 2's capped kernel spilled in its stages and ran 1.8x slower) against five launches a layer: GPU time per token and tg128 at -p 512; then the wgpu table of record with int8 activations by default (the wgpu code is main's).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
for v in 0 1; do for s in smollm2-135m-q4_0 llama-8b-q4_0; do CMF_CUDA_PERSIST=$v CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$s.gguf -p 16 -n 256 -r 1 --backend cuda --explain 2>&1 | grep -E "token graph, per|rror" | sed "s/^/persist=$v $s /"; done; done | tee $OUT/pass.txt
BINS=./cortiq BACKEND=cuda VARIANTS="CMF_CUDA_PERSIST=0 CMF_CUDA_PERSIST=1" PROMPT=512 GEN=128 REPS=1 ROUNDS=1 DEADLINE=60 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
cat $OUT/ab/ab.md
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout 200 bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
