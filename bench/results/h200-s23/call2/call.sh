#!/usr/bin/env bash
# Session 23 call 2: the token graph against the CPU on both backends (needs .gl for wgpu), then the row kernels' minimum blocks a SM (__launch_bounds__ second argument, CORTIQ_X in an uncommitted build: diff minb.diff) alternating: none / QKV 4 / QKV + matvec 4 / QKV + matvec + gate/up 4.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-x gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq-x synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for x in "" X_QKV_MINB.4 X_QKV_MINB.4:X_MV_MINB.4 X_QKV_MINB.4:X_MV_MINB.4:X_GLU_MINB.4; do CORTIQ_X=$x CMF_GPU=cuda ./cortiq-x gpu > /dev/null 2>&1 & done
timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|^wgpu|exit|panicked|test result|^test " $OUT/parity.log | head -40
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CORTIQ_X= CORTIQ_X=X_QKV_MINB.4 CORTIQ_X=X_QKV_MINB.4:X_MV_MINB.4 CORTIQ_X=X_QKV_MINB.4:X_MV_MINB.4:X_GLU_MINB.4" BINS="./cortiq-x" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) bash bench/ab.sh $OUT/ab-minb smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0 > /dev/null
cat $OUT/ab-minb/ab.md; tail -3 $OUT/ab-minb/ab.log; rm -f $OUT/ab-minb/ab.log
echo "done at $((SECONDS-start)) s"
