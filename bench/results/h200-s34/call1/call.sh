#!/usr/bin/env bash
# Prepared in session 33, NOT run: gate/up's units split between pairs of blocks
# (`glu-pairs.diff` on the commit that added it: two blocks an SM, block s and s + SMs sharing
# an SM pair's passes, so the busiest SM streams 3.5 units instead of 4 on llama-8b where the
# chip places each pair together; R = 4, unlike call 3's R = 2 split that lost). Build with the
# diff applied, carry cortiq and gpu_parity in gpuab/, copy this to gpuab/call.sh.
# Parity with the rule and forced everywhere, the A/B against whole units (CMF_X_GLU_SPLIT=0),
# and llama-8b q4_0's timeline, whose last table says how often the pairs shared an SM.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
T="token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it"
(CMF_X_GLU_SPLIT=force timeout 200 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity-force.log 2>&1; echo "rc $?" >> $OUT/parity-force.log) &
timeout 200 ./gpu_parity --test-threads 1 --nocapture $T > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
wait
for f in parity parity-force; do echo "$f: $(grep -E '^test result|^rc' $OUT/$f.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst|int8 chain)" $OUT/$f.log | head -20; done
BINS="./cortiq" VARIANTS="CMF_X_GLU_SPLIT=0 CMF_NONE=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=3 \
  DEADLINE=$((400-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q4_0 llama-8b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline llama-8b:q4_0 llama-8b:q8_0 | grep -E "^#|^\| (qkv|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline && tar czf parity.tgz parity*.log && rm parity*.log)
echo "end at $((SECONDS-start)) s"
