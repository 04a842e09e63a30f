#!/usr/bin/env bash
# Session 17 call 7: the wgpu quantizer loads its unit first and sums the row's squares from the units where one workgroup holds the row; the quantizer and the norm step take the subgroup reduction (2 barriers, not 10): the quantizer's parity, then greedy tg128 after a 512-token prompt on the int8 graphs (llama-1b, llama-8b) before (cortiq-old: 73cec72) and after, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_quantizer wgpu_int8 > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "exit|panicked|test result" $OUT/parity.log | head
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((170-(SECONDS-start))) bash bench/ab.sh $OUT/ab-greedy llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-greedy/ab.md
rm -f $OUT/ab-greedy/ab.log
echo "done at $((SECONDS-start)) s"
