#!/usr/bin/env bash
# Session 43, call 3: the f16 mirror with V copied by 16-byte cp.async (8 values a copy, as
# the f32 mirror's 4; call 2 copied 8 bytes a piece) and the grouped scores converting K once
# for all heads. A/B against cortiq-main (14e30dc) after -p 512 and -p 4096; then the
# exact-softmax test, the int8-chain test (now with the FFN as two launches in every run) and
# the fused-FFN test (call 1: llama-8b's greedy token off the CPU's at 3 of 24 steps; it now
# prints the two launches' agreement too).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
mkdir -p $OUT/ab
for p in 512 4096; do
  BINS="./cortiq-main ./cortiq" BACKEND=cuda PROMPT=$p GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M \
    bash bench/ab.sh $OUT/ab/p$p llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
  cat $OUT/ab/p$p/ab.md
done
echo "ab done at $((SECONDS-start)) s"
timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax cuda_int8_chain cuda_fused_ffn > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test |^test result|^rc|panicked|int8 chain|fused FFN vs" $OUT/parity.log | head -40
grep -E "cuda (grouped )?attention" $OUT/parity.log | awk '{print $NF, $0}' | sort -g | tail -2
(cd $OUT && gzip parity.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
