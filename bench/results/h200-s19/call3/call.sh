#!/usr/bin/env bash
# Session 19 call 3: the fold as in call 1 (a lane walks its row's units) plus the chunk's K and V mirror rows loaded first (before the QKV work, which they do not depend on): greedy tg128 after a 512-token prompt alternating in one binary: smollm2 q4_0 / q8_0 / q4_1 f32 graph (default) / int8 / int8 with the fold; llama-1b q4_0 int8 without / with; per-dispatch GPU times (CMF_GRAPH_HOSTPROF=2) on smollm2 q4_0 int8 without / with; then the token graph's parity.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 smollm2-135m:q8_0 smollm2-135m:q4_1 llama-1b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "synth done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_INT8=0 CMF_WGPU_INT8=1,CMF_WGPU_QKV_ATTN=0 CMF_WGPU_INT8=1,CMF_WGPU_QKV_ATTN=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=200 bash bench/ab.sh $OUT/ab-smollm2 smollm2-135m:q4_0 smollm2-135m:q8_0 smollm2-135m:q4_1 > /dev/null
cat $OUT/ab-smollm2/ab-runs.txt
VARIANTS="CMF_WGPU_QKV_ATTN=0 CMF_WGPU_QKV_ATTN=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((280-(SECONDS-start))) bash bench/ab.sh $OUT/ab-1b llama-1b:q4_0 > /dev/null
cat $OUT/ab-1b/ab-runs.txt
for v in 0 1; do CMF_WGPU_INT8=1 CMF_WGPU_QKV_ATTN=$v CMF_GRAPH_HOSTPROF=2 CMF_GPU=wgpu CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 1 --backend wgpu --explain > $OUT/profile-fold$v.txt 2>&1; echo "== fold $v"; grep -E "GPU time per token|tg128" $OUT/profile-fold$v.txt; done
echo "ab done at $((SECONDS-start)) s"
timeout $((570-(SECONDS-start))) ./gpu_parity --test-threads 1 --nocapture token_graph_matches wgpu_attention > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
grep -E "graph vs CPU|exit|panicked|test result" $OUT/parity-graph.log | head -30
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
