#!/usr/bin/env bash
# Session 42, call 2: decode attention by KV-head groups (graph.cu `attention_group`,
# CMF_CUDA_ATT_GROUP_FROM). Parity first (the split kernel against the exact softmax, per head
# and grouped everywhere it applies; the token graph against the CPU with the grouped path
# from 0 positions), then A/B in one call: cortiq-base (main, 87dd7f4) and the new build with
# the grouped path never / always (from 0 positions), tg128 after prompts of 512 .. 4096.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity-att.log 2>&1; echo "rc $?" >> $OUT/parity-att.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity-att.log | head -6; grep -c "relative L2" $OUT/parity-att.log; grep "grouped" $OUT/parity-att.log | head -30
CMF_CUDA_ATT_GROUP_FROM=0 timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1; echo "rc $?" >> $OUT/parity-graph.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity-graph.log | head -6; grep -E "graph vs CPU" $OUT/parity-graph.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq" VARIANTS="CMF_CUDA_ATT_GROUP_FROM=never CMF_CUDA_ATT_GROUP_FROM=0" \
  BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab-p512 llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab-p512/ab.md
for p in 4096 2048 1024; do
  BINS="./cortiq" VARIANTS="CMF_CUDA_ATT_GROUP_FROM=never CMF_CUDA_ATT_GROUP_FROM=0" \
    BACKEND=cuda PROMPT=$p GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab-p$p llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
  cat $OUT/ab-p$p/ab.md
done
(cd $OUT && gzip parity-att.log parity-graph.log)
echo "end at $((SECONDS-start)) s"
