#!/usr/bin/env bash
# Session 21 call 8: the matrix-unit GEMM with stages loaded two ahead (CMF_WGPU_COOP_STAGE=2x1x2) and, on an uncommitted build, with f32 activation rows rounded to f16 as stored instead of int8 units decoded (CMF_WGPU_PREFILL_INT8=0 CMF_WGPU_COOP_F32=1: no quantize dispatches, no X decode, 3.5x the X load bytes, 24 more registers); prefill-graph parity of the f32 form; pp512 alternating in one binary.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_WGPU_COOP_F32=1 timeout 100 ./gpu_parity --test-threads 1 --nocapture prefill_graph_chunks > $OUT/parity-prefill-f32.log 2>&1; echo "exit $?" >> $OUT/parity-prefill-f32.log; grep -E "exit|panicked|wgpu f32.*256 \+ rest|cortiq:" $OUT/parity-prefill-f32.log | head -8
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_STAGE=2x1x1 CMF_WGPU_COOP_STAGE=2x1x2 CMF_WGPU_PREFILL_INT8=0,CMF_WGPU_COOP_F32=1 CMF_WGPU_PREFILL_INT8=0,CMF_WGPU_COOP_F32=1,CMF_WGPU_COOP_STAGE=2x1x2" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((220-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
