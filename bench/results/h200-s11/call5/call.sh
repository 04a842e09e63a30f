#!/usr/bin/env bash
# Session 11 call 5: where a row kernel's time goes inside the captured token: GPU time per token with the row kernels' activation staging left out (X_NOSTAGE: a barrier only), their weight stream left out (X_NOSTREAM: no items), or both (the launch, the PDL wait and the exit); attention untouched. An uncommitted build, diff decompose.diff (CMF_X_DEFS adds #defines to the kernel source); outputs wrong, timing valid.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-x.gz > ./cortiq-x; chmod +x ./cortiq-x
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq-x synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
cpass() { CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-x bench -m $M/$1-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda --explain 2>&1 | grep -E "token graph, per|tg128 " | sed -e 's/.*host encode/host/' -e 's/.*tg128 //' | tr '\n' ' '; }
for s in smollm2-135m llama-1b llama-8b; do
  for d in "" X_NOSTAGE X_NOSTREAM X_NOSTAGE,X_NOSTREAM ""; do echo "$s defs:${d:-none} $(CMF_X_DEFS="$d" cpass $s)" | tee -a $OUT/decompose.txt; done
done
