#!/usr/bin/env bash
# Session 44, call 5 (review): the per-head split attention takes the grouped paths' chunk
# prologue (`chunk_at`, was `group_chunk`; the same arithmetic, ptxas: attention_h64 62 -> 64
# registers, h256 134 -> 136, h128 80 as before, blocks an SM unchanged): the exact-softmax
# test, then tg128 against HEAD's binary (cortiq-base) on llama-1b q4_0 (heads of 64).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0
timeout 90 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/softmax.log 2>&1; echo "rc $?" >> $OUT/softmax.log
grep -E "^test result|^rc|panicked" $OUT/softmax.log | head
wait
echo "parity done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((190-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
(cd $OUT && gzip softmax.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
