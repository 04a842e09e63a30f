#!/usr/bin/env bash
# Session 19 call 10: each token's step block copied into place at the start of its own command buffer from a per-position table built once (no queue.write_buffer between tokens): tg128 after a 512-token prompt, 9f622fb's build (cortiq-old) against this one, alternating, three rounds; sampled once.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=3 DEADLINE=200 MODELS_DIR=$M bash bench/ab.sh $OUT/ab-steps smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-steps/ab-runs.txt
BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=150 BENCH_ARGS="--sample" MODELS_DIR=$M bash bench/ab.sh $OUT/ab-steps-sampled smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-steps-sampled/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
