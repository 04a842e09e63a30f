#!/usr/bin/env bash
# Session 12 call 3: where a prompt chunk's time goes on CUDA: pp512 (and pp2048 for llama-8b) with each stage left out of every layer of the prefill graph (CMF_GRAPH_SKIP, now also in the CUDA prefill graph), cuBLAS path (default) and int8 path (CMF_CUDA_CUBLAS=0).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done; wait
echo "synth done at $((SECONDS-start)) s"
./cortiq gpu 2>&1 | grep -iE "prompt|kernels" | head -4
run() { # model prompt env...
  local m=$1 p=$2; shift 2
  local v=$(env "$@" CMF_GPU=cuda timeout 90 ./cortiq bench -m $M/$m.gguf -p $p -n 1 -r 3 --backend cuda 2>&1 | grep -E "\| pp$p " | awk -F'|' '{print $8}')
  echo -e "$m\tpp$p\t$*\t$v" | tee -a $OUT/prefill-anatomy.tsv
}
for m in llama-8b-q4_0 llama-1b-q4_0 smollm2-135m-q4_0; do
  for cub in 1 0; do
    for sk in "" qkv attn o glu down qkv,attn,o,glu,down; do run $m 512 CMF_CUDA_CUBLAS=$cub CMF_GRAPH_SKIP=$sk; done
  done
  [ $((SECONDS-start)) -gt 420 ] && break
done
for sk in "" attn; do run llama-8b-q4_0 2048 CMF_CUDA_CUBLAS=1 CMF_GRAPH_SKIP=$sk; done
