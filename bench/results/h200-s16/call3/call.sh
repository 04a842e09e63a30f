#!/usr/bin/env bash
# Session 16 call 3: the token graph's parity with the tokens queued ahead (params restored from the sequence's own pick where another sequence's call came in between); then where sampled decode's extra time goes: GPU tail per token greedy vs sampled (CMF_GRAPH_HOSTPROF=1, no tokens ahead), and the top-k / pick kernels' own times by ncu.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path cuda_draws sampled_tokens_drawn_ahead > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|^test |exit|panicked|test result" $OUT/parity.log | head -40
wait
echo "parity done at $((SECONDS-start)) s"
for s in smollm2-135m llama-1b; do
  for mode in greedy sampled; do
    args=""; [ $mode = sampled ] && args="--sample"
    CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 timeout 60 ./cortiq bench -m $M/$s-q4_0.gguf -p 512 -n 128 -r 2 --backend cuda $args --explain > $OUT/hostprof-$s-$mode.txt 2>&1
    echo "$s $mode: $(grep -E 'GPU tail' $OUT/hostprof-$s-$mode.txt | head -1)"
    grep -E "^\| .*tg128" $OUT/hostprof-$s-$mode.txt
  done
done
which ncu || ls /usr/local/cuda*/bin 2>/dev/null | grep -i ncu
NCU=$(which ncu 2>/dev/null || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  for s in smollm2-135m llama-1b; do
    CMF_GPU=cuda timeout 150 $NCU --clock-control none -k regex:"topk|pick_next|embed_row" --launch-skip 30 --launch-count 12 --metrics gpu__time_duration.sum ./cortiq bench -m $M/$s-q4_0.gguf -p 16 -n 16 -r 1 --backend cuda --sample > $OUT/ncu-$s.txt 2>&1
    echo "ncu $s exit $?"; grep -E "topk|pick_next|embed_row|gpu__time_duration|==ERR|==WARN" $OUT/ncu-$s.txt | head -40
  done
fi
echo "done at $((SECONDS-start)) s"
