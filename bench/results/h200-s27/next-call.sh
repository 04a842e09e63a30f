#!/usr/bin/env bash
# Prepared in session 27 for the next one (not run): the two next A/Bs for llama-8b q8_0 that
# NOTES.md (session 27) predicts. Build first, locally:
#   git apply bench/results/h200-s27/qkv-ring4.diff
#   cargo build --release --features cortiq-cli/cuda,cortiq-cli/gpu
#   cargo test --release --features cuda,gpu -p cortiq-engine --test gpu_parity --no-run
#   (gzip the stripped binaries into gpuab/ as cortiq.gz, gpu_parity.gz; copy this to gpuab/call.sh)
# Then: the token graph's parity with the ring switch (smollm2 q8_0 takes the QKV kernel on
# Q8_0), the timeline of each variant on llama-8b q8_0, and the A/B.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q8_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
CMF_CUDA_DEFINES=CORTIQ_QKV_Q8_RING4 timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-ring4.log 2>&1
echo "parity (ring4) rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-ring4.log)"; grep -E "panicked|FAILED|^cuda .*graph vs CPU" $OUT/parity-ring4.log | head
wait
echo "synth done at $((SECONDS-start)) s"
for v in base ring4 chain-attn; do
  case $v in
    ring4) set -- DEFINES=CORTIQ_QKV_Q8_RING4 ;;
    chain-attn) set -- CMF_CUDA_INT8_CHAIN=attn ;;
    *) set -- ;;
  esac
  env "$@" CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline-$v llama-8b:q8_0 | grep -E "^\| (qkv|gate_up|down) "
  rm -f $OUT/timeline-$v/*.gz
  echo "timeline [$v] at $((SECONDS-start)) s"
done
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_QKV_Q8_RING4 CMF_CUDA_INT8_CHAIN=attn" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
