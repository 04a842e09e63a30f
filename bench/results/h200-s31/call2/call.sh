#!/usr/bin/env bash
# Session 31, call 2: the mma_rows y-ahead fix's parity (the unfixed build's prefill test
# first), then the A/B of base (= HEAD + stage_image by cp.async + the fix), nl (norm-late),
# rope (RoPE rotation before the wait), both; README's table with the best.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0
(timeout 200 ./gpu_parity-async --test-threads 1 --nocapture prefill_graph_chunks_match_the_cpu_prefill > $OUT/parity-async-prefill.log 2>&1; echo "rc $?" >> $OUT/parity-async-prefill.log) &
(timeout 260 ./gpu_parity-both --test-threads 1 --nocapture prefill_graph_chunks_match_the_cpu_prefill cuda_graphs_norm_rows_wider_than_one_staging_round cuda_prefill_past_f16_range_follows_the_cpu_path > $OUT/parity-both-prefill.log 2>&1; echo "rc $?" >> $OUT/parity-both-prefill.log) &
timeout 260 ./gpu_parity-both --test-threads 1 --nocapture token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it cuda_attention_matches_an_exact_softmax > $OUT/parity-both.log 2>&1
echo "parity both rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-both.log)"; grep -E "panicked|FAILED|^cuda .*graph vs CPU" $OUT/parity-both.log | head
wait
for f in parity-async-prefill parity-both-prefill; do echo "$f: $(grep -E '^test result|^rc' $OUT/$f.log | tr '\n' ' ')"; grep -E "panicked|FAILED|relative L2" $OUT/$f.log | head -12; done
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq-nl ./cortiq-rope ./cortiq-both" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((450-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
best=$(cat $OUT/ab/ab-best.txt)
echo "best: $best at $((SECONDS-start)) s"
CORTIQ_BIN=$best BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda
cat $OUT/table-cuda/bench.md; echo "table by $best" > $OUT/table-cuda/binary.txt
(cd $OUT && tar czf table.tgz table-cuda && rm -rf table-cuda && tar czf parity.tgz parity-*.log && rm parity-*.log)
echo "end at $((SECONDS-start)) s"
