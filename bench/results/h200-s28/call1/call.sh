#!/usr/bin/env bash
# Session 28 call 1 (build: 78bfb0f + results/h200-s27/qkv-ring4.diff): session 27's prepared A/Bs for llama-8b q8_0 (the QKV q8_0 ring of 4 units, CORTIQ_QKV_Q8_RING4; gate/up without the int8 chain's glu link, CMF_CUDA_INT8_CHAIN=attn), the token graph's parity under the ring switch, and base timelines of llama-1b q4_0 and smollm2 q4_0 (the merge step's share at small models).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
CMF_CUDA_DEFINES=CORTIQ_QKV_Q8_RING4 timeout 120 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-ring4.log 2>&1
echo "parity (ring4) rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-ring4.log)"; grep -E "panicked|FAILED|graph vs CPU" $OUT/parity-ring4.log | head
wait
echo "synth done at $((SECONDS-start)) s"
for v in base ring4 chain-attn; do
  case $v in
    ring4) set -- DEFINES=CORTIQ_QKV_Q8_RING4 ;;
    chain-attn) set -- CMF_CUDA_INT8_CHAIN=attn ;;
    *) set -- ;;
  esac
  env "$@" CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline-$v llama-8b:q8_0 | grep -E "^\| (qkv|attention|merge|o|gate_up|down) "
  rm -f $OUT/timeline-$v/*.gz $OUT/timeline-$v/*.bin
  echo "timeline [$v] at $((SECONDS-start)) s"
done
CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 80 bash bench/timeline.sh $OUT/timeline-small llama-1b:q4_0 smollm2-135m:q4_0 | grep -E "^#|^\| (qkv|attention|merge|o|gate_up|down|stage) "
rm -f $OUT/timeline-small/*.gz $OUT/timeline-small/*.bin
echo "timeline small at $((SECONDS-start)) s"
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_QKV_Q8_RING4 CMF_CUDA_INT8_CHAIN=attn" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((570-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
cd $OUT && tar czf timelines.tgz timeline-* && rm -rf timeline-*
echo "end at $((SECONDS-start)) s"
