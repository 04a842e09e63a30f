#!/usr/bin/env bash
# Session 20 call 1: the int8 prompt GEMMs on the adapter's matrix units (cooperative matrices, gemm_coop.wgsl): what the adapter offers, the GEMM's parity against the CPU int8 kernels (matrix units on and off) and the prefill graph's, then pp512 with CMF_WGPU_MATRIX_UNITS=0 / 1 alternating in one binary.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
CMF_GPU=wgpu ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -E "device|matrix" $OUT/gpu.txt
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 200 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm.log 2>&1; echo "exit $?" >> $OUT/parity-gemm.log
grep -E "SKIP|matched|exit|panicked|test result" $OUT/parity-gemm.log | head -20
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_MATRIX_UNITS=0 CMF_WGPU_MATRIX_UNITS=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
for v in 0 1; do CMF_WGPU_MATRIX_UNITS=$v CMF_GRAPH_HOSTPROF=2 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-8b-q4_0.gguf -p 512 -n 4 -r 1 --backend wgpu --explain > $OUT/profile-8b-units$v.txt 2>&1; echo "== units $v"; grep -E "pp512|gemm" $OUT/profile-8b-units$v.txt | head -12; done
echo "ab done at $((SECONDS-start)) s"
timeout $((570-(SECONDS-start))) ./gpu_parity --test-threads 1 --nocapture prefill_graph_chunks > $OUT/parity-prefill.log 2>&1; echo "exit $?" >> $OUT/parity-prefill.log
grep -E "prefill|exit|panicked|test result" $OUT/parity-prefill.log | head -30
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
