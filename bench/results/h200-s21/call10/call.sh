#!/usr/bin/env bash
# Session 21 call 10 (uncommitted build, diff coop-f16.diff): the prefill graph's quantize dispatches writing f16 rows (the values before int8 rounding) and the matrix-unit GEMM storing them undecoded (CMF_WGPU_COOP_F16=1: 2x the int8 X bytes, 8 registers an item); prefill-graph parity under it (its chunks under 8 rows read the f16 rows as int8 units: only the 256-row cases mean anything); pp512 alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_WGPU_COOP_F16=1 timeout 60 ./gpu_parity --test-threads 1 --nocapture prefill_graph_chunks > $OUT/parity-prefill-f16.log 2>&1; echo "exit $?" >> $OUT/parity-prefill-f16.log; grep -E "exit|panicked|^wgpu .*256 \+ rest|cortiq:" $OUT/parity-prefill-f16.log | head -8
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_F16=0 CMF_WGPU_COOP_F16=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=3 DEADLINE=$((200-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
