#!/usr/bin/env bash
# Session 38, call 5: the landed form (the output projection's fold in its own kernel,
# matvec_img_fold, so the launches outside the fused FFN run call 1's code): the fused FFN's
# parity and the token-graph parity at the default setting (smollm2 fused), then README's table.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_fused_ffn_matches_the_cpu_path token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(fused FFN vs CPU|graph vs CPU)" $OUT/parity.log | head -14
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout 300 bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
cat $OUT/table/bench.md
(cd $OUT && gzip parity.log && tar czf table.tgz table && rm -rf table)
echo "end at $((SECONDS-start)) s"
