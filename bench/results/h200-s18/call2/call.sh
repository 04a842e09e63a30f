#!/usr/bin/env bash
# Session 18 call 2: the wgpu int8 graph's output and down projections write the next stage's normed int8 input themselves (q8_out.wgsl's residual kind: the sum added into x, then x * the next norm's weights quantized with x's squares beside; QKV, gate/up and the head apply the norm's scale, XMode::Int8Norm): two quantize dispatches a layer fewer. Parity of the kernels and the token graph, then greedy tg128 after a 512-token prompt: off / on (residual R 8) / R 16 / R 4, alternating in one binary.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 170 ./gpu_parity --test-threads 1 --nocapture wgpu_residual wgpu_quantizer wgpu_gate_up token_graph_matches > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^wgpu int8|exit|panicked|test result|cases" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_NORM_Q8=0 CMF_WGPU_NORM_Q8=1 CMF_WGPU_RESIDUAL_ROWS=16 CMF_WGPU_RESIDUAL_ROWS=4" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((480-(SECONDS-start))) bash bench/ab.sh $OUT/ab-norm llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-norm/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
