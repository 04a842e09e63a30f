#!/usr/bin/env bash
# Session 22 call 1: CUDA token graph's int8 chain (producers write the consumers' int8 input as an image): parity of the token graph against the CPU at every chain setting, then tg128 after a 512-token prompt, chain 0 / hidden / all and the build before (cortiq-old, 8a07bd6), alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda ./cortiq gpu 2>&1 | tail -5
CMF_GPU=cuda timeout 240 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result" $OUT/parity.log | head -40
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CMF_CUDA_INT8_CHAIN=0 CMF_CUDA_INT8_CHAIN=hidden CMF_CUDA_INT8_CHAIN=all" BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((480-(SECONDS-start))) bash bench/ab.sh $OUT/ab-chain smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null &
wait
cat $OUT/ab-chain/ab.md
grep -iE "error|panick" $OUT/ab-chain/ab.log | sort | uniq -c | head
rm -f $OUT/ab-chain/ab.log
echo "a/b done at $((SECONDS-start)) s"
BINS="./cortiq-old" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=1 DEADLINE=$((570-(SECONDS-start))) bash bench/ab.sh $OUT/ab-old smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-old/ab.md; rm -f $OUT/ab-old/ab.log
echo "done at $((SECONDS-start)) s"
