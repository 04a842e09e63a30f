#!/usr/bin/env bash
# Session 11 call 1: CUDA token-graph stage ablation at the table's context (-p 512 -n 128; CMF_GRAPH_SKIP, an uncommitted build, diff skip.diff: marginal us per stage); the wgpu int8 prompt GEMM (CMF_WGPU_PREFILL_INT8=1) against f32, pp512, alternating; its H200 parity (gpu_parity wgpu_int8 prefill_graph).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-skip gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf 2>/dev/null & done
wait
cpass() { CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 60 ./cortiq-skip bench -m $M/$1-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda --explain 2>&1 | grep -E "token graph, per|tg128 " | sed -e 's/.*host encode/host/' -e 's/.*tg128 //' | tr '\n' ' '; }
for s in smollm2-135m llama-1b llama-8b; do
  echo "$s base $(cpass $s)" >> $OUT/ablate-cuda.txt
  for k in qkv attn o glu down "qkv,attn,o,glu,down"; do echo "$s skip:$k $(CMF_GRAPH_SKIP="$k" cpass $s)" >> $OUT/ablate-cuda.txt; done
  echo "$s base-again $(cpass $s)" >> $OUT/ablate-cuda.txt
done
cat $OUT/ablate-cuda.txt
BINS=./cortiq BACKEND=wgpu VARIANTS="CMF_WGPU_PREFILL_INT8=0 CMF_WGPU_PREFILL_INT8=1" PROMPT=512 GEN=8 REPS=2 ROUNDS=2 DEADLINE=170 bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0
cat $OUT/ab-pp/ab.md; cat $OUT/ab-pp/ab-runs.txt
( timeout 200 ./gpu_parity --test-threads 1 --nocapture wgpu_int8 prefill_graph > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|int8|wgpu" $OUT/parity.log | head -40
