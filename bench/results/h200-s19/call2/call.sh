#!/usr/bin/env bash
# Session 19 call 2: the fold's QKV rebuilt (lanes over units, one load of each of a lane's units with all its rows' weight loads beside it, sums over subgroups; call 1's form had each lane walk ~5 units in a loop): greedy tg128 after a 512-token prompt alternating in one binary: smollm2 q4_0 / q8_0 f32 graph (default) / int8 / int8 with the fold; llama-1b q4_0 int8 without / with the fold; then the token graph's parity (wgpu int8 forced with the fold on every model).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_INT8=0 CMF_WGPU_INT8=1,CMF_WGPU_QKV_ATTN=0 CMF_WGPU_INT8=1,CMF_WGPU_QKV_ATTN=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=200 bash bench/ab.sh $OUT/ab-smollm2 smollm2-135m:q4_0 smollm2-135m:q8_0 > /dev/null
cat $OUT/ab-smollm2/ab-runs.txt
VARIANTS="CMF_WGPU_QKV_ATTN=0 CMF_WGPU_QKV_ATTN=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((280-(SECONDS-start))) bash bench/ab.sh $OUT/ab-1b llama-1b:q4_0 > /dev/null
cat $OUT/ab-1b/ab-runs.txt
echo "ab done at $((SECONDS-start)) s"
timeout $((570-(SECONDS-start))) ./gpu_parity --test-threads 1 --nocapture token_graph_matches > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
grep -E "graph vs CPU|exit|panicked|test result" $OUT/parity-graph.log | head -30
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
