#!/usr/bin/env bash
# Session 24 call 1: the CUDA prefill graph's f16 operand guard (SPEC section 6): the new test and the CUDA parity, then pp512 A/B against main (cortiq-old, no guard).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 300 ./gpu_parity --test-threads 1 --nocapture cuda_prefill_past_f16_range_follows_the_cpu_path cuda_attention_matches cuda_graphs_norm_rows prefill_graph_chunks_match_the_cpu_prefill token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "parity rc $? at $((SECONDS-start)) s"
grep -E "^test |test result|f16|panicked" $OUT/parity.log | head -60
wait
BINS="./cortiq-old ./cortiq" BACKEND=cuda PROMPT=512 GEN=16 REPS=2 ROUNDS=2 DEADLINE=$((480-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab-p512 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-p512/ab.md; rm -f $OUT/ab-p512/ab.log
echo "done at $((SECONDS-start)) s"
