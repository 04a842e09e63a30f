#!/usr/bin/env bash
# Session 27 call 2: the landed form (K quarters interleaved, V copies by the register map): CUDA parity, the block timeline of the captured decode token on four shapes (bench/timeline.sh), then the CUDA table of record.
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
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout 200 bash bench/timeline.sh $OUT/timeline smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0
grep -h -E "tg" $OUT/timeline/bench-*.txt | head
echo "table from $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((585-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
echo "table rc $? at $((SECONDS-start)) s"; cat $OUT/table-cuda/bench.md 2>/dev/null | grep -E "tg128|pp512" | head -12
