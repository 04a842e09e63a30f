#!/usr/bin/env bash
# Session 10 call 2: the persistent CUDA token kernel (one launch for every layer of a token, grid barriers between stages; CMF_CUDA_PERSIST=1, the default) against five launches a layer (=0): a smoke run, parity (token graph; and the two wgpu tests that found no adapter late in call 1's full run, alone), GPU time per token, then A/B tg128 at -p 512.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
for v in 0 1; do echo "smoke persist=$v"; CMF_CUDA_PERSIST=$v CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 16 -n 64 -r 1 --backend cuda 2>&1 | grep -E "tg64|pp16|rror" ; echo "exit $?"; done
for v in 0 1; do for s in smollm2-135m-q4_0 llama-1b-q4_0 llama-8b-q4_0; do CMF_CUDA_PERSIST=$v CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$s.gguf -p 16 -n 256 -r 1 --backend cuda --explain 2>&1 | grep "token graph, per" | sed "s/^/persist=$v $s /"; done; done | tee $OUT/pass.txt
( timeout 240 ./gpu_parity --test-threads 1 --nocapture token_graph wgpu_quantizer wgpu_splits > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|graph vs CPU" $OUT/parity.log | head -40
BINS=./cortiq BACKEND=cuda VARIANTS="CMF_CUDA_PERSIST=0 CMF_CUDA_PERSIST=1" PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=150 bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0
cat $OUT/ab/ab.md
