#!/usr/bin/env bash
# Session 22 call 5: the f32 staging's registers. stage_x keeps STAGE_PASSES x 8 values (and as many norm weights) in flight, which puts the normed row kernels at 107-124 registers (2 blocks of 256 threads an SM); ptxas (NVRTC, locally): STAGE_PASSES 2 -> 62-80, 1 -> 45-80. tg128 after a 512-token prompt, this build (4) against builds with 2 and 1 (cortiq-sp2, cortiq-sp1; diffs sp2.diff, sp1.diff), alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-sp2 cortiq-sp1; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for b in cortiq cortiq-sp2 cortiq-sp1; do CMF_GPU=cuda ./$b gpu > /dev/null 2>&1 & done
wait
echo "synth and kernel compiles done at $((SECONDS-start)) s"
BINS="./cortiq ./cortiq-sp2 ./cortiq-sp1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((520-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sp smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 llama-8b:q8_0 > /dev/null
cat $OUT/ab-sp/ab.md
grep -iE "error|panick" $OUT/ab-sp/ab.log | sort | uniq -c | head
rm -f $OUT/ab-sp/ab.log
echo "done at $((SECONDS-start)) s"
