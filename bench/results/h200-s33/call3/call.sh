#!/usr/bin/env bash
# Session 33, call 3: gate/up in passes of 16 rows with units split between blocks
# (chain::split_unit_blocks: on llama-8b, 264 blocks, the busiest SM 3.5 units instead of 4).
# Parity with the rule (only llama-8b splits) and with every model forced to split
# (CMF_X_GLU_SPLIT=force), then the A/B split / whole units (CMF_X_GLU_SPLIT=0) and block
# timelines of llama-8b.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
T="token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it"
(CMF_X_GLU_SPLIT=force timeout 200 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity-force.log 2>&1; echo "rc $?" >> $OUT/parity-force.log) &
timeout 200 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
wait
for f in parity parity-force; do echo "$f: $(grep -E '^test result|^rc' $OUT/$f.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst|int8 chain)" $OUT/$f.log | head -20; done
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_X_GLU_SPLIT=0 CMF_NONE=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=3 \
  DEADLINE=$((400-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q4_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
BINS="./cortiq" VARIANTS="CMF_X_GLU_SPLIT=0 CMF_X_GLU_SPLIT=force" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((420-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab-force llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab-force/ab.md
echo "ab done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline llama-8b:q4_0 llama-8b:q8_0 | grep -E "^#|^\| (qkv|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline && tar czf parity.tgz parity*.log && rm parity*.log)
echo "end at $((SECONDS-start)) s"
