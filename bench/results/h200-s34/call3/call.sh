#!/usr/bin/env bash
# Session 34, call 3: the int8 image kernels (o, down) with a weight ring of 16 units a thread
# for Q4 kinds (Q8_0 and the other row kernels keep 8): call 2's timeline put down -1.6 us and
# o -0.3 us a layer on llama-8b q4_0 with every ring at 16, while qkv (fewer blocks an SM) and
# gate/up lost. Four refused starts left ~270 s of device time, so only: the int8 chain's
# bit-identity test (the chain's image kernels at 16 against the graph without the chain, whose
# matvecs keep 8; it includes llama-8b q4_0), then the A/B against 8 (CMF_X_RING_IMAGE=8) on
# llama-1b q4_0 and smollm2 q4_0 (llama-8b's synthesis does not fit the time).
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-1b:q4_0 smollm2-135m:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 110 ./gpu_parity --test-threads 1 --nocapture cuda_int8_chain_gives_the_logits_of_the_graph_without_it > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*int8 chain" $OUT/parity.log | head -20
wait
echo "parity and synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_X_RING_IMAGE=8 CMF_NONE=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((165-(SECONDS-start))) \
  MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
