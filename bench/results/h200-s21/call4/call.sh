#!/usr/bin/env bash
# Session 21 call 4: where the matrix-unit GEMM's stage loop spends its time (CMF_WGPU_COOP_ABLATE=decode|products|loads|barriers, outputs wrong), pp512 alternating in one binary on llama-8b and llama-1b q4_0; the stage-less token graph test (fixed for the deferred norm).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_token_graph_without > $OUT/parity-skip.log 2>&1; echo "exit $?" >> $OUT/parity-skip.log; tail -3 $OUT/parity-skip.log
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_COOP_ABLATE= CMF_WGPU_COOP_ABLATE=decode CMF_WGPU_COOP_ABLATE=products CMF_WGPU_COOP_ABLATE=loads CMF_WGPU_COOP_ABLATE=barriers" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=1 ROUNDS=2 DEADLINE=$((250-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pp llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-pp/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
