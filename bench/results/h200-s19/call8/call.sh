#!/usr/bin/env bash
# Session 19 call 8: where smollm2's decode token goes now (bench/anatomy.sh BACKEND=wgpu: each stage left out of the recorded token; with QKV inside the attention split, "qkv" leaves nothing out and "attn" both), with the default build and with CMF_WGPU_QKV_ATTN=0; the whole token's GPU pass against tg128's wall time.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
CORTIQ_BIN=./cortiq BACKEND=wgpu MODELS_DIR=$M bash bench/anatomy.sh $OUT/anatomy-wgpu smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/anatomy-wgpu/anatomy.md
CMF_WGPU_QKV_ATTN=0 CORTIQ_BIN=./cortiq BACKEND=wgpu MODELS_DIR=$M bash bench/anatomy.sh $OUT/anatomy-wgpu-nofold smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/anatomy-wgpu-nofold/anatomy.md
for v in 1 0; do echo "== fold $v"; CMF_WGPU_QKV_ATTN=$v CMF_GRAPH_HOSTPROF=1 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 2 --backend wgpu --explain 2>&1 | grep -E "tg128|per token over"; done | tee $OUT/hostprof.txt
rm -f $OUT/anatomy-*/*.log
echo "done at $((SECONDS-start)) s"
