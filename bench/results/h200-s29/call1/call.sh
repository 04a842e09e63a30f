#!/usr/bin/env bash
# Session 29 call 1 (build: 78bfb0f + the row kernels' trace marks and CORTIQ_RING_FULL): the token graph's parity with every ring slot issued before the wait (CORTIQ_RING_FULL), timelines of smollm2 q4_0 and llama-8b q8_0 with the block time starting at the wait release / after staging / after the dot products, and the A/B of CORTIQ_RING_FULL.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
CMF_CUDA_DEFINES=CORTIQ_RING_FULL timeout 150 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-ringfull.log 2>&1
echo "parity (ring full) rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-ringfull.log)"; grep -E "panicked|FAILED|graph vs CPU" $OUT/parity-ringfull.log | head
wait
echo "synth done at $((SECONDS-start)) s"
for v in base staged dotted; do
  case $v in
    staged) set -- DEFINES=CORTIQ_TRACE_STAGED ;;
    dotted) set -- DEFINES=CORTIQ_TRACE_DOTTED ;;
    *) set -- ;;
  esac
  env "$@" CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 100 bash bench/timeline.sh $OUT/timeline-$v smollm2-135m:q4_0 llama-8b:q8_0 | grep -E "^## |^\| (qkv|attention|merge|o|gate_up|down) "
  rm -f $OUT/timeline-$v/*.gz $OUT/timeline-$v/*.bin
  echo "timeline [$v] at $((SECONDS-start)) s"
done
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_RING_FULL" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
cd $OUT && tar czf timelines.tgz timeline-* && rm -rf timeline-*
echo "end at $((SECONDS-start)) s"
