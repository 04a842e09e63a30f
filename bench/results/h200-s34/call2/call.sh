#!/usr/bin/env bash
# Session 34, call 2: the row kernels' weight ring at 16 units a thread (CMF_X_RING, the landed
# build + ring-knob.diff): 16 for Q4_0 / Q4_1 / f16 (80 KB a block), and 16 for Q8_0 as well
# (147 KB, one block an SM). Parity with both at 16 during the models' synthesis, then the A/B
# against 8 / 8, then llama-8b q4_0's timeline at 16.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
T="token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it prefill_graph_chunks_match_the_cpu_prefill"
CMF_X_RING=16,16 timeout 200 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst|int8 chain attn,glu)" $OUT/parity.log | head -20
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_RING=16 CMF_X_RING=16,16" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((480-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CMF_X_RING=16 CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 40 bash bench/timeline.sh $OUT/timeline llama-8b:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline && gzip parity.log)
echo "end at $((SECONDS-start)) s"
