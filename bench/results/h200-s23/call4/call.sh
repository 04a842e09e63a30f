#!/usr/bin/env bash
# Session 23 call 4: the landed build (the split attention's merge as its own kernel, the last-block merge and its counters gone): parity on both backends (the attention against an exact softmax, the int8 chain, the token graph against the CPU), the CUDA table of record (REPS=2), then against 0e33d09 (cortiq-old) alternating at a longer context (-p 2000) and sampled.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda ./cortiq-old gpu > /dev/null 2>&1 &
timeout 280 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches cuda_int8_chain token_graph_matches_the_cpu_path token_graph_candidates cuda_graphs_norm_rows_wider > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "exit|panicked|test result|^test " $OUT/parity.log | head -20
wait
echo "parity + synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout 150 bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
cat $OUT/table-cuda/bench.md; rm -f $OUT/table-cuda/*.log
echo "table done at $((SECONDS-start)) s"
BINS="./cortiq-old ./cortiq" BACKEND=cuda PROMPT=2000 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((470-(SECONDS-start))) bash bench/ab.sh $OUT/ab-p2000 smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-p2000/ab.md; rm -f $OUT/ab-p2000/ab.log
BINS="./cortiq-old ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 BENCH_ARGS=--sample DEADLINE=$((560-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sampled smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-sampled/ab.md; rm -f $OUT/ab-sampled/ab.log
echo "done at $((SECONDS-start)) s"
