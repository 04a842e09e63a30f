#!/usr/bin/env bash
# Session 21 call 3: the matrix-unit GEMM's 64 x 64 tile split over more subgroups with fewer sums each (CMF_WGPU_COOP_TILE=MxNxFMxFN: 2x4x2x1, 4x2x1x2, 4x4x1x1) and a 32 x 32 tile (2x2x1x1), against the default 2x2x2x2; pp512 alternating in one binary; parity of 4x4x1x1.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_WGPU_COOP_TILE=4x4x1x1 timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-4x4x1x1.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-4x4x1x1.log; grep -E "SKIP|matched|exit|panicked|NVVM|cortiq:" $OUT/parity-gemm-4x4x1x1.log | head -6
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_TILE=2x2x2x2 CMF_WGPU_COOP_TILE=2x4x2x1 CMF_WGPU_COOP_TILE=4x2x1x2 CMF_WGPU_COOP_TILE=4x4x1x1 CMF_WGPU_COOP_TILE=2x2x1x1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((260-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
