#!/usr/bin/env bash
# Session 8 call 7: the stage ablation again with this session's kernels (marginal GPU pass time per stage), and the shared-memory reduction.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-x.gz > ./cortiq-x; chmod +x cortiq-x
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-x synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done; wait
pass() { CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-x bench -m $M/$1-q4_0.gguf -p 16 -n 256 -r 1 --backend wgpu --explain 2>&1 | grep "token graph, per" | sed 's/.*on the GPU //'; }
for s in smollm2-135m llama-1b llama-8b; do
  echo "$s base $(pass $s)" >> $OUT/ablate.txt
  for k in qkv rope "attention split" "attention combine" "o proj" gate down; do echo "$s skip:$k $(CMF_GRAPH_SKIP="$k" pass $s)" >> $OUT/ablate.txt; done
  echo "$s nonorm $(CMF_GRAPH_NONORM=1 pass $s)" >> $OUT/ablate.txt
  echo "$s skip:all-but-matvec $(CMF_GRAPH_SKIP="rope,attention" pass $s)" >> $OUT/ablate.txt
  echo "$s shared-reduce $(CMF_WGPU_SUBGROUPS=0 pass $s)" >> $OUT/ablate.txt
  echo "$s base-again $(pass $s)" >> $OUT/ablate.txt
done
cat $OUT/ablate.txt
