#!/usr/bin/env bash
# Session 33, call 1: session 32's spread launches (spread.rs) as they land: the parity
# tests with CUDA's lines printed (--nocapture; the build has wgpu too, which has no adapter
# here, so CORTIQ_REQUIRE_GPU would fail on it), README's table, and block timelines of
# llama-8b q4_0 / q8_0, llama-1b q4_0 and smollm2 q4_0.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path prefill_graph_chunks_match_the_cpu_prefill cuda_int8_chain_gives_the_logits_of_the_graph_without_it > $OUT/parity.log 2>&1
echo "parity rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity.log)"
grep -E "panicked|FAILED|^cuda .*(graph vs CPU|bit)|^test " $OUT/parity.log | head -30
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout 300 bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
cat $OUT/table/bench.md
echo "table done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 150 bash bench/timeline.sh $OUT/timeline llama-8b:q4_0 llama-8b:q8_0 llama-1b:q4_0 smollm2-135m:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline && tar czf table.tgz table && rm -rf table)
echo "end at $((SECONDS-start)) s"
