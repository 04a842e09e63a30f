#!/usr/bin/env bash
# Session 44, call 2: the split attention merged by the output projection (CMF_CUDA_ATT_O,
# att_o.rs; one binary) against the merge launch, alternating, on llama-1b and llama-8b q4_0
# after -p 512, at three block shapes; then its parity test against the CPU path.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
CMF_GPU=cuda CMF_CUDA_ATT_O=1 ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
mkdir -p $OUT/ab
BINS="./cortiq" VARIANTS="X_BASE=1 CMF_CUDA_ATT_O=n4r1 CMF_CUDA_ATT_O=n2r1 CMF_CUDA_ATT_O=n8r2" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) MODELS_DIR=$M \
  bash bench/ab.sh $OUT/ab/p512 llama-1b:q4_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/p512/ab.md
grep -i -E "error|panic" $OUT/ab/p512/ab.log | head -5
echo "ab done at $((SECONDS-start)) s"
timeout $((560-(SECONDS-start))) ./gpu_parity --test-threads 1 --nocapture cuda_output_projection_merge > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked|merge in o vs" $OUT/parity.log | head -20
(cd $OUT && gzip parity.log && tar czf ab.tgz ab && rm -rf ab)
echo "end at $((SECONDS-start)) s"
