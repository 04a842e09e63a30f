#!/usr/bin/env bash
# Session 29 call 3: the landed build (78bfb0f + the trace marks, which compile to nothing by default): timelines of smollm2 q4_0 with the block time from the wait release and from the return of the normed row's loads (CORTIQ_TRACE_LOADED), then the CUDA table of record.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
./cortiq synth smollm2-135m --codec q4_0 -o $M/smollm2-135m-q4_0.gguf >/dev/null 2>&1
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q8_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
for v in base loaded; do
  case $v in
    loaded) set -- DEFINES=CORTIQ_TRACE_LOADED ;;
    *) set -- ;;
  esac
  env "$@" CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 60 bash bench/timeline.sh $OUT/timeline-$v smollm2-135m:q4_0 | grep -E "^## |^\| (qkv|attention|merge|o|gate_up|down) "
  rm -f $OUT/timeline-$v/*.gz $OUT/timeline-$v/*.bin
  echo "timeline [$v] at $((SECONDS-start)) s"
done
(cd $OUT && tar czf timelines.tgz timeline-* && rm -rf timeline-*)
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda REPS=2 BANDWIDTH=4350 MODELS_DIR=$M timeout 330 bash bench/gpu-all.sh $OUT/table-cuda > /dev/null 2>&1
echo "table rc $? at $((SECONDS-start)) s"; cat $OUT/table-cuda/bench.md 2>/dev/null | grep -E "tg128|pp512|cuda" | head -12
