#!/usr/bin/env bash
# Session 38, call 2: the fused FFN (CMF_CUDA_FFN_FUSED=1, gpu/cuda/ffn.rs): gate/up and the
# down projection's columns in one launch, the blocks' shares added into x's fixed-point
# pending part. Its parity against the CPU and the two launches (and two fused runs bit-equal),
# the A/B against the two launches on the bench shapes, the token-graph parity with it on,
# then llama-1b q4_0's timeline with it.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_fused_ffn_matches_the_cpu_path > $OUT/parity.log 2>&1; rc=$?; echo "rc $rc" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*fused FFN vs CPU" $OUT/parity.log | head -12
wait
echo "synth done at $((SECONDS-start)) s"
CMF_GPU=cuda CMF_CUDA_FFN_FUSED=1 timeout 40 ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 512 -n 128 -r 1 --backend cuda --explain > $OUT/explain.txt 2>&1; grep -iE "FFN as one|tg128|error" $OUT/explain.txt | head -5
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_FFN_FUSED=1" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((440-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-1b:q4_0 smollm2-135m:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
CMF_CUDA_FFN_FUSED=1 CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline-fused llama-1b:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|ffn|head) "
rm -f $OUT/timeline-fused/*.gz $OUT/timeline-fused/*.bin
CMF_CUDA_FFN_FUSED=1 timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1; echo "rc $?" >> $OUT/parity-graph.log
grep -E "^cuda .*graph vs CPU|panicked|^test result|^rc" $OUT/parity-graph.log | head -20
(cd $OUT && gzip parity.log parity-graph.log)
echo "end at $((SECONDS-start)) s"
