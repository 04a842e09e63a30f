#!/usr/bin/env bash
# Session 20 call 2: the matrix-unit GEMM decoding two values at a time under an f16 exponent and storing its tiles as vec4s of f16 pairs; its parity at tiles 2x2 (default), 2x4 and 4x4 subgroups; pp512 on smollm2 / llama-1b / llama-8b q4_0 with the packed dot products (CMF_WGPU_MATRIX_UNITS=0) and matrix units at each tile, alternating in one binary; the 8b prefill's stage times at the best.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for t in 2x2 2x4 4x4; do CMF_WGPU_COOP_TILE=$t timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-$t.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-$t.log; echo "== tile $t"; grep -E "SKIP|matched|exit|panicked" $OUT/parity-gemm-$t.log | head -6; done
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_MATRIX_UNITS=0 CMF_WGPU_COOP_TILE=2x2 CMF_WGPU_COOP_TILE=2x4 CMF_WGPU_COOP_TILE=4x2 CMF_WGPU_COOP_TILE=4x4" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((420-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
for t in 2x4 4x4; do CMF_WGPU_COOP_TILE=$t CMF_GRAPH_HOSTPROF=2 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-8b-q4_0.gguf -p 512 -n 4 -r 1 --backend wgpu --explain > $OUT/profile-8b-$t.txt 2>&1; echo "== tile $t"; grep -E "pp512|per prefill chunk" $OUT/profile-8b-$t.txt | head -12; done
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
