#!/usr/bin/env bash
# Session 26 call 3: the landed form (V through shared memory for 128-wide heads, 3 blocks a SM): CUDA parity (attention against the exact softmax, the 128-head tiny-wide token graph against the CPU, the token graph, the int8 chain), the A/B of 3 against 4 blocks a SM on llama-8b, then the CUDA table of record.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax cuda_graphs_norm_rows_wider_than_one_staging_round token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it > $OUT/parity.log 2>&1
echo "parity rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity.log)"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU|worst)|^cuda: |^test " $OUT/parity.log | head -30
CMF_CUDA_DEFINES=CORTIQ_ATT_4BLOCKS timeout 60 ./gpu_parity --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity-4blocks.log 2>&1
echo "parity 4 blocks rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-4blocks.log)"
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_ATT_4BLOCKS" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((400-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0
cat $OUT/ab/ab.md
echo "table from $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((585-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
echo "table rc $? at $((SECONDS-start)) s"; cat $OUT/table-cuda/bench.md 2>/dev/null | grep -E "tg128|pp512" | head -12
