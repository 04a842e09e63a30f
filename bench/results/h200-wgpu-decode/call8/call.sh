#!/usr/bin/env bash
# Session 8 call 8: the token graph's norms in dispatches of their own on wide models (s) vs in the matvec loads (w); vec4 norm kernel.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq-s; gunzip -c gpuab/cortiq-w.gz > ./cortiq-w; chmod +x cortiq-s cortiq-w
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-8b:q4_0; do ./cortiq-s synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done; wait
pass() { b=$1; shift; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-$b bench -m $M/$1-q4_0.gguf -p 512 -n 128 -r 1 --backend wgpu --explain 2>&1 | grep -E "token graph, per|pp512 " | sed -e 's/.*on the GPU //' -e 's/^run 1.1: //' | tr '\n' ' '; }
for r in 1 2; do for b in w s; do echo "llama-8b $b $(pass $b llama-8b)" >> $OUT/ab.txt; done; done
for b in w s; do echo "smollm2-135m $b $(pass $b smollm2-135m)" >> $OUT/ab.txt; done
cat $OUT/ab.txt
