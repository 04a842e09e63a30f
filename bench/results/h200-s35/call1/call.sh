#!/usr/bin/env bash
# Prepared in session 34, NOT run: the int8 image kernels' ring at 16 units (Q4 kinds) on the
# model it was meant for. Build with `call3/ring-image.diff` applied (switch CMF_X_RING_IMAGE,
# default 16; `call3/ring-image-landing.diff` is the same as a constant, with its host test),
# carry cortiq in gpuab/, copy this to gpuab/call.sh. The bit-identity test already passed
# with it (call 3); this is the A/B against 8 on llama-8b q4_0 (call 2's timeline: down
# -1.6 us, o -0.3 us a layer) and llama-1b q4_0 (call 3: -0.4 %), then the timeline at 16.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q4_0 llama-1b:q4_0
(./gpuab/cluster_layer > $OUT/probe.md 2>&1 || { cd bench/probes && nvcc -O3 -arch=sm_90 -o /tmp/cl cluster_layer.cu && /tmp/cl > $OUT/probe.md 2>&1; }); cat $OUT/probe.md
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_X_RING_IMAGE=8 CMF_NONE=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=3 \
  DEADLINE=$((400-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q4_0 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline llama-8b:q4_0 llama-1b:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline)
echo "end at $((SECONDS-start)) s"
