#!/usr/bin/env bash
# Session 14 call 11 (review mend): the wgpu argmax encoded only when a call reads it back; tg128 --sample (where it no longer runs) and greedy, the previous build (12f2432) against this one, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-prev; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
BINS="./cortiq-prev ./cortiq" BENCH_ARGS=--sample BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=150 bash bench/ab.sh $OUT/ab-sample smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-sample/ab.md
BINS="./cortiq-prev ./cortiq" BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=1 DEADLINE=230 bash bench/ab.sh $OUT/ab-tg128 smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-tg128/ab.md
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
