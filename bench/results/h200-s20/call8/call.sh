#!/usr/bin/env bash
# Session 20 call 8: where the matrix-unit GEMM's time goes (CMF_WGPU_COOP_ABLATE=decode: the stage's words stored undecoded; =products: no matrix products; outputs wrong) and larger blocks of named sums per subgroup (CMF_WGPU_COOP_TILE=MxNxFMxFN: 2x2x2x4, 2x2x4x2, 4x1x2x4); pp512 alternating in one binary on llama-8b and llama-1b q4_0; parity at 2x2x2x4.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_WGPU_COOP_TILE=2x2x2x4 timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-2x2x2x4.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-2x2x2x4.log
grep -E "SKIP|matched|exit|panicked|NVVM|cortiq:" $OUT/parity-gemm-2x2x2x4.log | head -6
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_TILE=2x2x2x2 CMF_WGPU_COOP_ABLATE=decode CMF_WGPU_COOP_ABLATE=products CMF_WGPU_COOP_TILE=2x2x2x4 CMF_WGPU_COOP_TILE=2x2x4x2 CMF_WGPU_COOP_TILE=4x1x2x4" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((250-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
