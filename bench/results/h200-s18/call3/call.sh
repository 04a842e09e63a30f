#!/usr/bin/env bash
# Session 18 call 3: the unit-writing kernels' parity on the H200 (the residual kind at 4 .. 32 rows a group, quantizer mode 3, gate/up), the token graph's (int8 llama-1b with the norm deferred), then greedy tg128 after a 512-token prompt: deferred norm off / on (residual R 16, the new default) / R 32, alternating in one binary.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_residual wgpu_quantizer wgpu_gate_up > $OUT/parity-kernels.log 2>&1; echo "exit $?" >> $OUT/parity-kernels.log
grep -E "exit|panicked|test result|cases|SKIP" $OUT/parity-kernels.log | head
timeout 230 ./gpu_parity --test-threads 1 --nocapture token_graph_matches > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
grep -E "graph vs CPU|exit|panicked|test result" $OUT/parity-graph.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_NORM_Q8=0 CMF_WGPU_NORM_Q8=1 CMF_WGPU_RESIDUAL_ROWS=32" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((500-(SECONDS-start))) bash bench/ab.sh $OUT/ab-norm llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-norm/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
