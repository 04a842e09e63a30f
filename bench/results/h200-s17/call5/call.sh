#!/usr/bin/env bash
# Session 17 call 5: CUDA topk_merge's ranks counted by up to 32 lanes together (the warps' first keys, the gathered keys: rank_among), and the draw's finite count and min-p cut by __syncthreads_count instead of one thread's loops: parity, ncu times before (cortiq-old: 37bf1db) and after, sampled tg128 after a 512-token prompt alternating, then this build's greedy once (the gap left).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 100 ./gpu_parity --test-threads 1 --nocapture cuda_top_k cuda_draws sampled_tokens_drawn_ahead > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result" $OUT/parity.log | head -20
wait
echo "parity done at $((SECONDS-start)) s"
for s in smollm2-135m llama-1b; do
  for b in cortiq-old cortiq; do
    CMF_GPU=cuda timeout 100 /usr/local/cuda/bin/ncu --clock-control none -k regex:"topk" --launch-skip 30 --launch-count 4 --metrics gpu__time_duration.sum ./$b bench -m $M/$s-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --sample > $OUT/ncu-$s-$b.txt 2>&1
    echo "ncu $s $b exit $?"; grep -E "^  [a-z_]+ \(|gpu__time_duration" $OUT/ncu-$s-$b.txt | paste - - | awk '{print $1, $(NF)}'
  done
done
echo "ncu done at $((SECONDS-start)) s"
BENCH_ARGS="--sample" BINS="./cortiq-old ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((200-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sampled llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-sampled/ab.md
grep -iE "error|panick" $OUT/ab-sampled/ab.log | sort | uniq -c | head
rm -f $OUT/ab-sampled/ab.log
BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=1 DEADLINE=$((250-(SECONDS-start))) bash bench/ab.sh $OUT/greedy llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/greedy/ab.md
rm -f $OUT/greedy/ab.log
echo "done at $((SECONDS-start)) s"
