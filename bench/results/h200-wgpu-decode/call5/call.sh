#!/usr/bin/env bash
# Session 8 call 5: wide matrices at 128x8 (w) vs n; per-kind GPU profile and the kernel table with w.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq-w; gunzip -c gpuab/cortiq-n.gz > ./cortiq-n; chmod +x cortiq-n cortiq-w
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-w synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done; wait
pass() { b=$1; shift; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-$b bench -m $M/$1-q4_0.gguf -p 16 -n 256 -r 1 --backend wgpu --explain 2>&1 | grep -E "token graph, per|tg256 " | sed -e 's/.*on the GPU //' -e 's/.*tg256 //' | tr '\n' ' '; }
for r in 1 2 3; do for b in n w; do echo "llama-8b $b $(pass $b llama-8b)" >> $OUT/ab.txt; done; done
cat $OUT/ab.txt
for s in smollm2-135m llama-1b llama-8b; do echo "# $s" >> $OUT/profile.txt; CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=2 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-w bench -m $M/$s-q4_0.gguf -p 16 -n 128 -r 1 --backend wgpu --explain 2>&1 | grep -E "GPU time per token|token graph, per" >> $OUT/profile.txt; done
timeout 200 ./cortiq-w gpu --kernels --bandwidth 3800 > $OUT/kernels.md 2>/dev/null
cat $OUT/profile.txt; sed -n 12,40p $OUT/kernels.md
