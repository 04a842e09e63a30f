#!/usr/bin/env bash
# Session 20 call 3: the matrix-unit GEMM with its tiles as f16 (as call 1) or vec4<f16> elements (call 2's u32-typed tiles did not compile: NVVM), at tiles of 2x2 .. 4x4 subgroups: parity at 2x2 and 2x2v, then pp512 alternating in one binary against the packed dot products; the 8b prefill's stage times at 2x4v.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for t in 2x2 2x2v; do CMF_WGPU_COOP_TILE=$t timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-$t.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-$t.log; echo "== tile $t"; grep -E "SKIP|matched|exit|panicked|NVVM" $OUT/parity-gemm-$t.log | head -6; done
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_MATRIX_UNITS=0 CMF_WGPU_COOP_TILE=2x2 CMF_WGPU_COOP_TILE=2x2v CMF_WGPU_COOP_TILE=2x4v CMF_WGPU_COOP_TILE=4x2v CMF_WGPU_COOP_TILE=4x4v" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((400-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
for t in 2x4v; do CMF_WGPU_COOP_TILE=$t CMF_GRAPH_HOSTPROF=2 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/llama-8b-q4_0.gguf -p 512 -n 4 -r 1 --backend wgpu --explain > $OUT/profile-8b-$t.txt 2>&1; echo "== tile $t"; grep -E "pp512|per prefill chunk" $OUT/profile-8b-$t.txt | head -12; done
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
