#!/usr/bin/env bash
# Session 32, call 1: blocks spread by shared memory (spread.rs) on qkv, gate/up (in place of
# launching apart) and o/down (in place of the fixed two-an-SM cap); CMF_X_OLD=qkv,glu,img is
# HEAD's behaviour. Also attention capped at 3 an SM (CMF_X_ATT_PER=3) and the max shared
# memory carveout (CMF_X_CARVE=100). Build: HEAD + spread-x.diff.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_REQUIRE_GPU=1 ./gpu_parity --test-threads 1 token_graph_matches_the_cpu_path prefill_graph_chunks_match_the_cpu_prefill cuda_int8_chain_gives_the_logits_of_the_graph_without_it > $OUT/parity.log 2>&1
echo "parity rc $? at $((SECONDS-start)) s"; grep -E "test result|FAILED|panicked" $OUT/parity.log | head
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_X_OLD=qkv,glu,img CMF_NONE=1 CMF_X_OLD=qkv,img CMF_X_ATT_PER=3 CMF_X_CARVE=100" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((520-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
