#!/usr/bin/env bash
# Session 27 call 1: parity of the two attention variants written in session 26 (K quarters interleaved, V copies by the register map), the block timeline of the captured decode token (CORTIQ_TRACE) on four shapes, then the A/B of the variants.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
CMF_CUDA_DEFINES=CORTIQ_ATT_K_INTERLEAVE,CORTIQ_ATT_V_MAP timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax token_graph_matches_the_cpu_path > $OUT/parity-variants.log 2>&1
echo "parity (both variants) rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-variants.log)"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU|worst)|^test " $OUT/parity-variants.log | head -20
wait
echo "synth done at $((SECONDS-start)) s"
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do
  f=${s%%:*}-${s##*:}
  CMF_CUDA_DEFINES=CORTIQ_TRACE CMF_GRAPH_HOSTPROF=1 CMF_CUDA_TRACE=$OUT/trace-$f.bin timeout 60 ./cortiq bench -m $M/$f.gguf -p 512 -n 16 -r 1 --backend cuda > $OUT/trace-$f.txt 2>&1
  echo "trace $f rc $? at $((SECONDS-start)) s"; grep -E "tg|error" $OUT/trace-$f.txt | head -3
  python3 bench/timeline.py $OUT/trace-$f.bin 8 > $OUT/timeline-$f.md 2>&1; cat $OUT/timeline-$f.md
  gzip -f $OUT/trace-$f.bin
done
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_ATT_K_INTERLEAVE CMF_CUDA_DEFINES=CORTIQ_ATT_V_MAP CMF_CUDA_DEFINES=CORTIQ_ATT_K_INTERLEAVE,CORTIQ_ATT_V_MAP" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((570-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
