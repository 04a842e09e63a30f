#!/usr/bin/env bash
# Session 18 call 6: the wgpu token's GPU time per kind of dispatch with the unit-writing kernels (CMF_GRAPH_HOSTPROF=2: a timestamp pair around every dispatch, ~5.5 us of it each, so relative sizes only) at the table's context, llama-1b and llama-8b q4_0: where the next gains are.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
for s in llama-1b llama-8b; do
  echo "# $s" >> $OUT/profile.txt
  CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=2 CMF_PROBE_CACHE=0 timeout 90 ./cortiq bench -m $M/$s-q4_0.gguf -p 512 -n 64 -r 1 --backend wgpu --explain >> $OUT/profile.txt 2>&1
done
grep -vE "^\s*$" $OUT/profile.txt | head -90
echo "done at $((SECONDS-start)) s"
