#!/usr/bin/env bash
# Session 17 call 3: CUDA top-k with its global loads batched (topk_warps: the slice's 16 loads a lane issued before any key is made, indices clamped; topk_merge: the gather 8 keys a thread at a time, loaded before any is tested): parity, ncu times and topk_warps' SASS stall samples, sampled tg128 after a 512-token prompt before (cortiq-old, ce034a9) and after, alternating; then the wgpu stage ablation at the table's context (bench/anatomy.sh, BACKEND=wgpu).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 120 ./gpu_parity --test-threads 1 --nocapture cuda_top_k cuda_draws sampled_tokens_drawn_ahead token_graph_candidates > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|^wgpu|exit|panicked|test result" $OUT/parity.log | head -20
wait
echo "parity done at $((SECONDS-start)) s"
for s in smollm2-135m llama-1b; do
  for b in cortiq-old cortiq; do
    CMF_GPU=cuda timeout 100 /usr/local/cuda/bin/ncu --clock-control none -k regex:"topk" --launch-skip 30 --launch-count 4 --metrics gpu__time_duration.sum ./$b bench -m $M/$s-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --sample > $OUT/ncu-$s-$b.txt 2>&1
    echo "ncu $s $b exit $?"; grep -E "^  [a-z_]+ \(|gpu__time_duration" $OUT/ncu-$s-$b.txt | paste - - | awk '{print $1, $(NF)}'
  done
done
CMF_GPU=cuda timeout 120 /usr/local/cuda/bin/ncu --clock-control none --section WarpStateStats --section SourceCounters --page source --print-source sass -k regex:"topk_warps" --launch-skip 20 --launch-count 1 ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --sample > $OUT/ncu-topk-warps-sass.txt 2>&1
echo "ncu sass exit $? ($(wc -l < $OUT/ncu-topk-warps-sass.txt) lines)"
echo "ncu done at $((SECONDS-start)) s"
BENCH_ARGS="--sample" BINS="./cortiq-old ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sampled llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-sampled/ab.md
grep -iE "error|panick" $OUT/ab-sampled/ab.log | sort | uniq -c | head
rm -f $OUT/ab-sampled/ab.log
echo "a/b done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKEND=wgpu MODELS_DIR=$M timeout $((560-(SECONDS-start))) bash bench/anatomy.sh $OUT/anatomy-wgpu > /dev/null 2>&1
cat $OUT/anatomy-wgpu/anatomy.md
echo "done at $((SECONDS-start)) s"
