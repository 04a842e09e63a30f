#!/usr/bin/env bash
# Session 39, call 2: a decode token's attention as one launch of clusters of 16 blocks a KV
# head (CMF_X_ATT_GQA=1, kernels/gqa.cu): K / V loaded once for the KV head's query heads, the
# split's merge from distributed shared memory, no merge kernel. Its parity (the exact-softmax
# test's one-row cases take it; the token graph against the CPU), then the A/B against the
# split + merge kernels.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q4_0 llama-1b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CMF_X_ATT_GQA=1 timeout 100 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity-att.log 2>&1; echo "rc $?" >> $OUT/parity-att.log
grep -E "^test result|^rc|panicked" $OUT/parity-att.log | head -5; grep -E "x (64|128), 1 rows" $OUT/parity-att.log | head -20
CMF_X_ATT_GQA=1 timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1; echo "rc $?" >> $OUT/parity-graph.log
grep -E "^cuda .*graph vs CPU|panicked|^test result|^rc" $OUT/parity-graph.log | head -10
echo "parity done at $((SECONDS-start)) s"
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_ATT_GQA=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((520-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
(cd $OUT && gzip parity-att.log parity-graph.log)
echo "end at $((SECONDS-start)) s"
