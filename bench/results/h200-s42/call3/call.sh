#!/usr/bin/env bash
# Session 42, call 3: the landing form of call 2's grouped attention (the 128-wide head kernel
# only, from the context at which KV heads x chunks reach the SMs: 1025 positions on the
# llama shapes). Parity: the split kernel against the exact softmax (per head, and grouped
# wherever it applies), the tiny-wide graph (40 heads of 128 over 8 KV heads) against the CPU
# with the grouped path from 0 positions. A/B in one call against cortiq-base (main, 87dd7f4):
# tg128 after -p 512 (the rule leaves every shape per head there: no change expected), then
# llama-8b after longer prompts (the default rule groups there).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
grep -i "attention" $OUT/gpu.txt
timeout 120 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity-att.log 2>&1; echo "rc $?" >> $OUT/parity-att.log
grep -E "^test |^test result|^rc|panicked" $OUT/parity-att.log | head -6; grep "grouped attention" $OUT/parity-att.log | grep " x \(80\|96\|112\|128\)" | head -20
CMF_CUDA_ATT_GROUP_FROM=0 timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_graphs_norm_rows_wider_than_one_staging_round > $OUT/parity-wide.log 2>&1; echo "rc $?" >> $OUT/parity-wide.log
grep -E "^test |^test result|^rc|panicked|worst relative|vs CPU" $OUT/parity-wide.log | head -10
wait
echo "synth done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
for spec in llama-8b:q4_0@4096 llama-8b:q8_0@4096 llama-8b:q4_0@1024 llama-8b:q4_0@2048; do
  p=${spec##*@}
  BINS="./cortiq-base ./cortiq" BACKEND=cuda PROMPT=$p GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((545-(SECONDS-start))) MODELS_DIR=$M \
    bash bench/ab.sh $OUT/ab/${spec%%:*}-${spec#*:} ${spec%@*} > /dev/null 2>&1
  tail -n +3 $OUT/ab/${spec%%:*}-${spec#*:}/ab.md
done
(cd $OUT && gzip parity-att.log parity-wide.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
