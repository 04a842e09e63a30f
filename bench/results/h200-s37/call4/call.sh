#!/usr/bin/env bash
# Session 37, call 4 (the session's last ~300 s of device time): call 3's claimed head with
# its groups split over 8 counters (blocks b % 8 share one), so each counter takes an eighth
# of the atomics (call 3's one counter: -2 %, -5.6 % at twice the claims). Parity, then a
# short A/B on the two models that synthesize fast.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CMF_X_HEAD_CLAIM=1 timeout 60 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU logits, worst)" $OUT/parity.log | head -6
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_X_HEAD_CLAIM=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((150-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
(cd $OUT && gzip parity.log)
echo "end at $((SECONDS-start)) s"
