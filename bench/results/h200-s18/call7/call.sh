#!/usr/bin/env bash
# Session 18 call 7: the unit-writing kernels at 512 invocations a workgroup (CMF_WGPU_RESIDUAL_INVOCATIONS / CMF_WGPU_GLU_INVOCATIONS): their parity on the H200, then greedy tg128 after a 512-token prompt, the residual kind at 256 x 16 rows (default) / 512 x 16 / 512 x 8, gate/up at 512, alternating in one binary.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 40 ./gpu_parity --test-threads 1 --nocapture wgpu_residual wgpu_gate_up > $OUT/parity-kernels.log 2>&1; echo "exit $?" >> $OUT/parity-kernels.log
grep -E "exit|panicked|test result|cases|SKIP" $OUT/parity-kernels.log | head
wait
VARIANTS="CMF_WGPU_RESIDUAL_INVOCATIONS=256 CMF_WGPU_RESIDUAL_INVOCATIONS=512 CMF_WGPU_RESIDUAL_INVOCATIONS=512,CMF_WGPU_RESIDUAL_ROWS=8 CMF_WGPU_GLU_INVOCATIONS=512" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=1 DEADLINE=$((150-(SECONDS-start))) bash bench/ab.sh $OUT/ab-inv llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-inv/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
