#!/usr/bin/env bash
# Session 16 call 2: CUDA tokens queued ahead on the device's pick (greedy: the argmax; sampled: the draw, pick_next in topk.cu): parity (device draws, top-k, sampled and greedy tokens ahead, the token graph against the CPU), then tg128 at -p 512 before (cortiq-old, HEAD 1e2163c) and after, greedy and sampled, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_draws cuda_top_k sampled_tokens_drawn_ahead token_graph_candidates > $OUT/parity-draw.log 2>&1; echo "exit $?" >> $OUT/parity-draw.log
grep -E "^cuda|^test |exit|panicked|test result" $OUT/parity-draw.log | head -30
CMF_GPU=cuda timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
grep -E "ahead|agreement|^test |exit|panicked|test result" $OUT/parity-graph.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 --backend cuda --sample --explain > $OUT/explain-sampled.txt 2>&1; echo "exit $?" >> $OUT/explain-sampled.txt
grep -E "tg128|ahead|exit" $OUT/explain-sampled.txt
for mode in greedy sampled; do
  args=""; [ $mode = sampled ] && args="--sample"
  BENCH_ARGS="$args" BINS="./cortiq-old ./cortiq" VARIANTS="CMF_X=0" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((570-(SECONDS-start))) bash bench/ab.sh $OUT/ab-$mode llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
  echo "## $mode"; cat $OUT/ab-$mode/ab.md
  grep -iE "error|panick" $OUT/ab-$mode/ab.log | sort | uniq -c | head
  rm -f $OUT/ab-$mode/ab.log
done
echo "done at $((SECONDS-start)) s"
