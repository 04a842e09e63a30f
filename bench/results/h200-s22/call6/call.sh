#!/usr/bin/env bash
# Session 22 call 6: stage_x at 2 passes with the normed row read twice (squares first, then the values; no width limit), against call 5's sp2 build (cortiq-sp2, the same passes with one read and rows up to 4096): the CUDA parity (the token graph against the CPU, the row kernels at every codec and odd shape), then tg128 alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-sp2 gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda ./cortiq-sp2 gpu > /dev/null 2>&1 &
CMF_GPU=cuda timeout 150 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path matmul_matches > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result|^test " $OUT/parity.log | head -40
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq-sp2 ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((270-(SECONDS-start))) bash bench/ab.sh $OUT/ab-reads smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-reads/ab.md; rm -f $OUT/ab-reads/ab.log
echo "done at $((SECONDS-start)) s"
