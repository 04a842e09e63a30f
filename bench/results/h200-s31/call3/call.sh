#!/usr/bin/env bash
# Session 31, call 3: the landed build (HEAD + the mma_rows fix + RoPE's rotation before the
# wait) as committed: parity, the A/B against call 2's base on the small models, and block
# timelines of llama-8b q4_0, llama-1b q4_0 and smollm2 q4_0 for the next session.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0
(timeout 200 ./gpu_parity --test-threads 1 --nocapture prefill_graph_chunks_match_the_cpu_prefill cuda_int8_chain_gives_the_logits_of_the_graph_without_it > $OUT/parity-prefill.log 2>&1; echo "rc $?" >> $OUT/parity-prefill.log) &
timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1
echo "parity graph rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-graph.log)"; grep -E "panicked|FAILED|^cuda .*graph vs CPU" $OUT/parity-graph.log | head
wait
echo "parity prefill: $(grep -E '^test result|^rc' $OUT/parity-prefill.log | tr '\n' ' ')"; grep -E "panicked|FAILED" $OUT/parity-prefill.log | head
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 120 bash bench/timeline.sh $OUT/timeline llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline && tar czf parity.tgz parity-*.log && rm parity-*.log)
echo "end at $((SECONDS-start)) s"
