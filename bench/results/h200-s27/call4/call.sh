#!/usr/bin/env bash
# Session 27 call 4 (build: 0c3bd77 with the gate/up launch of the token and prefill graphs not overlapped when CMF_CUDA_SERIAL_GLU=1, a switch that existed only for this call): is gate/up's tail its blocks' placement? Launched without programmatic dependent launch (CMF_CUDA_SERIAL_GLU, temporary), its 224 blocks start on an idle chip and spread over every SM; timelines with block detail, then the A/B.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
wait
echo "synth done at $((SECONDS-start)) s"
CMF_CUDA_SERIAL_GLU=1 CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 100 bash bench/timeline.sh $OUT/timeline-serial llama-8b:q8_0 llama-8b:q4_0 | grep -v "^trace\|^$"
rm -f $OUT/timeline-serial/*.gz
echo "timeline at $((SECONDS-start)) s"
VARIANTS="CMF_CUDA_SERIAL_GLU= CMF_CUDA_SERIAL_GLU=1" BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((250-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
