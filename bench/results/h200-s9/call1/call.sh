#!/usr/bin/env bash
# Session 9 call 1: CUDA token-graph stage ablation (CMF_GRAPH_SKIP, an uncommitted build: marginal us per stage); wgpu prompt attention A/B (w: wip/attn-rows-256 vs main); wgpu device prefix and attention parity on the H200.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; gunzip -c gpuab/cortiq-w.gz > ./cortiq-w; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq cortiq-w gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
( timeout 200 ./gpu_parity --test-threads 1 --nocapture wgpu_device_prefix wgpu_attention > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
wait
cpass() { CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$1-q4_0.gguf -p 16 -n 256 -r 1 --backend cuda --explain 2>&1 | grep -E "token graph, per|tg256 " | sed -e 's/.*host encode/host/' -e 's/.*tg256 //' | tr '\n' ' '; }
for s in smollm2-135m llama-1b llama-8b; do
  echo "$s base $(cpass $s)" >> $OUT/ablate-cuda.txt
  for k in qkv attn o glu down "qkv,attn,o,glu,down"; do echo "$s skip:$k $(CMF_GRAPH_SKIP="$k" cpass $s)" >> $OUT/ablate-cuda.txt; done
  echo "$s base-again $(cpass $s)" >> $OUT/ablate-cuda.txt
done
cat $OUT/ablate-cuda.txt
wpp() { b=$1; CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 90 ./$b bench -m $M/$2-q4_0.gguf -p 512 -n 8 -r 2 --backend wgpu 2>&1 | grep -E "pp512 " | tail -1; }
for r in 1 2; do for s in smollm2-135m llama-1b llama-8b; do for b in cortiq cortiq-w; do echo "$s $b $(wpp $b $s)" >> $OUT/ab-pp.txt; done; done; done
cat $OUT/ab-pp.txt
grep -E "^test |parity exit|panicked|test result|prefix|attention" $OUT/parity.log | head -40
