#!/usr/bin/env bash
# Session 8 call 3: kernel table with the clock warm-up; ablation of each stage of the wgpu token graph (marginal GPU pass time).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; gunzip -c gpuab/cortiq-x.gz > ./cortiq-x; chmod +x cortiq cortiq-x
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 200 > $OUT/smi.csv 2>&1 &
SMI=$!
timeout 200 ./cortiq gpu --kernels --bandwidth 3800 > $OUT/kernels.md 2>/dev/null
kill $SMI; wait
pass() { CMF_GPU=wgpu CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-x bench -m $M/$1-q4_0.gguf -p 16 -n 256 -r 1 --backend wgpu --explain 2>&1 | grep "token graph, per" | sed 's/.*on the GPU //'; }
for s in smollm2-135m llama-1b llama-8b; do
  echo "$s base $(pass $s)" >> $OUT/ablate.txt
  for k in qkv rope "attention split" "attention combine" "o proj" gate down; do echo "$s skip:$k $(CMF_GRAPH_SKIP="$k" pass $s)" >> $OUT/ablate.txt; done
  echo "$s nonorm $(CMF_GRAPH_NONORM=1 pass $s)" >> $OUT/ablate.txt
  echo "$s skip:all-but-matvec $(CMF_GRAPH_SKIP="rope,attention" pass $s)" >> $OUT/ablate.txt
done
cat $OUT/ablate.txt; sed -n 12,30p $OUT/kernels.md; awk -F', ' '{print $2}' $OUT/smi.csv | sort | uniq -c
