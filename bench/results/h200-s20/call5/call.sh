#!/usr/bin/env bash
# Session 20 call 5: the landed form (call 3's 2x2 tile of vec4<f16> tiles, its sums in four variables; the default): parity of the int8 GEMMs (matrix units and packed dot products) and of the prefill graph; pp512 with CMF_WGPU_MATRIX_UNITS=0 / 1 on the q8_0 models and llama-8b q4_0, one round; then the wgpu table of record (bench/gpu-all.sh, REPS=2).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 200 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec prefill_graph_chunks > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "SKIP|matched|exit|panicked|cortiq:|wgpu.*256 \+ rest" $OUT/parity.log | head -20
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_MATRIX_UNITS=0 CMF_WGPU_MATRIX_UNITS=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=1 DEADLINE=$((260-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-8b:q8_0 llama-1b:q8_0 smollm2-135m:q8_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 MODELS_DIR=$M timeout $((540-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > /dev/null 2>&1
cat $OUT/table-wgpu/bench.md
rm -f $OUT/ab-*/ab.log $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
