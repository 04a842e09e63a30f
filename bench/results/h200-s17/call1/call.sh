#!/usr/bin/env bash
# Session 17 call 1: the wgpu top-k by ranks (topk_groups: the k-th largest of the invocations' largest keys bounds the group's k-th; topk_merge: the larger of the largest k-th key and the k-th largest first key; the keys at or above the bound placed by rank) with the draw folded into the merge: wgpu parity (168 top-k cases, device draws, sampled tokens ahead, the graph's candidates), then wgpu sampled and greedy tg128 after a 512-token prompt, before (cortiq-old, HEAD ce034a9) and after, alternating; then ncu's detail of CUDA's topk_warps (where its ~11 us go).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 150 ./gpu_parity --test-threads 1 --nocapture wgpu_top_k wgpu_draws sampled_tokens_drawn_ahead token_graph_candidates > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^wgpu|^cuda|^test |exit|panicked|test result" $OUT/parity.log | head -20
wait
echo "parity done at $((SECONDS-start)) s"
for mode in sampled greedy; do
  args=""; [ $mode = sampled ] && args="--sample"
  BENCH_ARGS="$args" BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) bash bench/ab.sh $OUT/ab-$mode smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
  echo "## $mode"; cat $OUT/ab-$mode/ab.md
  grep -iE "error|panick" $OUT/ab-$mode/ab.log | sort | uniq -c | head
  rm -f $OUT/ab-$mode/ab.log
done
echo "a/b done at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 120 /usr/local/cuda/bin/ncu --clock-control none --set full -k regex:"topk_warps|topk_merge" --launch-skip 20 --launch-count 2 ./cortiq bench -m $M/llama-1b-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --sample > $OUT/ncu-topk-full.txt 2>&1
echo "ncu exit $?"; grep -E "^  [a-z_]+|Duration|Elapsed Cycles|Achieved Occupancy|Registers Per|Theoretical Occ|One or More|Stall|Warp Cycles Per Issued" $OUT/ncu-topk-full.txt | head -40
echo "done at $((SECONDS-start)) s"
