#!/usr/bin/env bash
# Session 21 call 2: the matrix-unit GEMM's stage (CMF_WGPU_COOP_STAGE=UxB: U units a stage in B copies of the tiles) swept, pp512 alternating in one binary with the prompt attention on the matrix units (call 1's gain); parity of 1x2 and 4x1; cortiq gpu's lines.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=wgpu ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -E "prompt|matrix" $OUT/gpu.txt
for v in 1x2 4x1; do CMF_WGPU_COOP_STAGE=$v timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_int8_matvec > $OUT/parity-gemm-$v.log 2>&1; echo "exit $?" >> $OUT/parity-gemm-$v.log; echo "== stage $v"; grep -E "SKIP|matched|exit|panicked|NVVM|cortiq:" $OUT/parity-gemm-$v.log | head -6; done
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_STAGE=2x1 CMF_WGPU_COOP_STAGE=1x1 CMF_WGPU_COOP_STAGE=1x2 CMF_WGPU_COOP_STAGE=4x1 CMF_WGPU_COOP_STAGE=2x2" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
