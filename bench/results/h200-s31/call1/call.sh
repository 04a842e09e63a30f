#!/usr/bin/env bash
# Prepared in session 30 for the next one (not run): the A/B of stage_image variants (NOTES.md,
# session 30). Build four binaries first, locally, from a clean tree at the commit that
# added this file:
#   base:  cargo build --release --features gpu,cuda
#   async: git apply bench/results/h200-s30/image-async.diff, build; also
#          cargo test --release --features gpu,cuda --no-run (the gpu_parity binary it names
#          is gpu_parity-async); git checkout crates
#   img8:  git apply bench/results/h200-s29/image-loads-together.diff, build, git checkout crates
#   img4:  git apply bench/results/h200-s30/image4.diff, build, git checkout crates
# Strip and gzip them into gpuab/ as cortiq-base.gz, cortiq-async.gz, cortiq-img8.gz,
# cortiq-img4.gz, gpu_parity-async.gz; copy this to gpuab/call.sh; carry gpuab.
# Then: parity of async (during the synth), the A/B, and README's table with the binary whose
# tg128 geometric mean over base is highest.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0
timeout 150 ./gpu_parity-async --test-threads 1 --nocapture token_graph_matches_the_cpu_path cuda_int8_chain_gives_the_logits_of_the_graph_without_it cuda_attention_matches_an_exact_softmax > $OUT/parity-async.log 2>&1
echo "parity async rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-async.log)"; grep -E "panicked|FAILED|^cuda .*graph vs CPU" $OUT/parity-async.log | head
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq-base ./cortiq-async ./cortiq-img8 ./cortiq-img4" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((400-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
best=$(cat $OUT/ab/ab-best.txt)
echo "best: $best at $((SECONDS-start)) s"
CORTIQ_BIN=$best BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout $((540-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table-cuda
cat $OUT/table-cuda/bench.md; echo "table by $best" > $OUT/table-cuda/binary.txt
(cd $OUT && tar czf table.tgz table-cuda && rm -rf table-cuda)
echo "end at $((SECONDS-start)) s"
