#!/usr/bin/env bash
# Session 42, call 4: the grouped attention for heads of 64 with V in registers
# (graph.cu `attention_group64`; call 2's form with V in shared memory cost llama-1b 2.8 % on
# the per-head path). Parity: the split kernel against the exact softmax (per head and grouped
# wherever it applies), the token graph against the CPU with the grouped path from 0
# positions (tiny, smollm2 and llama-1b all have heads of 64). A/B in one call against
# cortiq-base (main, 87dd7f4): tg128 after -p 512 (per head there: no change expected), then
# after 4096 and 2048 (the default rule groups llama-1b from 1025 positions, smollm2 from 2753).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
grep -i "attention" $OUT/gpu.txt
timeout 100 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity-att.log 2>&1; echo "rc $?" >> $OUT/parity-att.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity-att.log | head -6; grep "grouped attention" $OUT/parity-att.log | grep " x \(64\|16\), 1 rows" | head -20
CMF_CUDA_ATT_GROUP_FROM=0 timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1; echo "rc $?" >> $OUT/parity-graph.log
grep -E "^test result|^rc|panicked" $OUT/parity-graph.log | head -6; grep -E "graph vs CPU" $OUT/parity-graph.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
for spec in p512 p4096 p2048; do
  BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=${spec#p} GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((420-(SECONDS-start))) MODELS_DIR=$M \
    bash bench/ab.sh $OUT/ab/$spec llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
  cat $OUT/ab/$spec/ab.md
done
(cd $OUT && gzip parity-att.log parity-graph.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
