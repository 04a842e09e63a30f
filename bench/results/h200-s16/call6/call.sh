#!/usr/bin/env bash
# Session 16 call 6: topk_warps by ranks too (the k-th largest of the lanes' two largest keys bounds the warp's k-th from below; the keys at or above it placed by rank): parity (168 top-k cases, device draws, sampled tokens ahead, the graph's candidates), the kernels' times by ncu, then sampled and greedy tg128 at -p 512 before (cortiq-old, HEAD 1e2163c) and after, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 150 ./gpu_parity --test-threads 1 --nocapture cuda_top_k cuda_draws sampled_tokens_drawn_ahead token_graph_candidates > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|^test |exit|panicked|test result" $OUT/parity.log | head -20
wait
echo "parity done at $((SECONDS-start)) s"
for s in smollm2-135m llama-1b; do
  CMF_GPU=cuda timeout 100 /usr/local/cuda/bin/ncu --clock-control none -k regex:"topk|pick_" --launch-skip 30 --launch-count 6 --metrics gpu__time_duration.sum ./cortiq bench -m $M/$s-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --sample > $OUT/ncu-$s.txt 2>&1
  echo "ncu $s exit $?"; grep -E "^  [a-z_]+ \(|gpu__time_duration" $OUT/ncu-$s.txt | paste - - | awk '{print $1, $(NF)}'
done
for mode in sampled greedy; do
  args=""; [ $mode = sampled ] && args="--sample"
  BENCH_ARGS="$args" BINS="./cortiq-old ./cortiq" VARIANTS="CMF_X=0" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) bash bench/ab.sh $OUT/ab-$mode llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
  echo "## $mode"; cat $OUT/ab-$mode/ab.md
  grep -iE "error|panick" $OUT/ab-$mode/ab.log | sort | uniq -c | head
  rm -f $OUT/ab-$mode/ab.log
done
echo "done at $((SECONDS-start)) s"
