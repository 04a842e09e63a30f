#!/usr/bin/env bash
# Session 37, call 1: the spread row launches (qkv, gate/up by units, o / down on the int8
# image) as thread-block clusters with the spread scheduling policy at the shared memory they
# stage (CMF_X_ROW_CLUSTER = 8 or 16), against the landed launches whose shared memory is
# raised until no SM takes more than its even share of blocks (spread.rs). Parity with 16,
# then the A/B, then llama-1b q4_0's timeline with 16 (where the blocks landed).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
T="token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it"
CMF_X_ROW_CLUSTER=16 timeout 150 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst|int8 chain attn,glu)" $OUT/parity.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_ROW_CLUSTER=8 CMF_X_ROW_CLUSTER=16" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((470-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CMF_X_ROW_CLUSTER=16 CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline llama-1b:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
