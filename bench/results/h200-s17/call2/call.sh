#!/usr/bin/env bash
# Session 17 call 2: the wgpu top-k merge's bound from the groups' leading keys (ceil(k / groups) of each; call 1's bound, the largest k-th key alone, let ~400-900 of smollm2's and llama-1b's 480-1280 keys through): wgpu parity, sampled tg128 after a 512-token prompt before (cortiq-old, ce034a9) and after, alternating; then the CUDA and wgpu tables of record with this build (greedy; neither backend's greedy path changed since call 1).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_top_k wgpu_draws sampled_tokens_drawn_ahead > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^wgpu|^cuda|exit|panicked|test result" $OUT/parity.log | head -20
wait
echo "parity done at $((SECONDS-start)) s"
BENCH_ARGS="--sample" BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((200-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sampled smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-sampled/ab.md
grep -iE "error|panick" $OUT/ab-sampled/ab.log | sort | uniq -c | head
rm -f $OUT/ab-sampled/ab.log
echo "a/b done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout 250 bash bench/gpu-all.sh $OUT/table-cuda > $OUT/gpu-all-cuda.log 2>&1; cat $OUT/table-cuda/bench.md
rm -f $OUT/table-cuda/*.log
echo "cuda table done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 MODELS_DIR=$M timeout $((590-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
rm -f $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
