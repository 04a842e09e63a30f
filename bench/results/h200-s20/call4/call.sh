#!/usr/bin/env bash
# Session 20 call 4: the matrix-unit GEMM with vec4<f16> tiles and each subgroup's block of FM x FN 16 x 16 sums held in an array (CMF_WGPU_COOP_TILE=SGMxSGNxFMxFN; call 3's 2x2v is 2x2x2x2): parity at the default, then pp512 alternating in one binary against the packed dot products at six tiles.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for t in 2x2x2x2 2x2x4x2; do CMF_WGPU_COOP_TILE=$t timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-$t.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-$t.log; echo "== tile $t"; grep -E "SKIP|matched|exit|panicked|NVVM|cortiq:" $OUT/parity-gemm-$t.log | head -6; done
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_MATRIX_UNITS=0 CMF_WGPU_COOP_TILE=2x2x2x2 CMF_WGPU_COOP_TILE=2x2x4x2 CMF_WGPU_COOP_TILE=2x2x2x4 CMF_WGPU_COOP_TILE=2x2x4x4 CMF_WGPU_COOP_TILE=4x2x2x2 CMF_WGPU_COOP_TILE=2x4x4x2" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((400-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
grep -h "cortiq:" $OUT/ab-pp/ab.log | sort | uniq -c | head
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
