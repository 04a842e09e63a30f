#!/usr/bin/env bash
# Session 18 call 1: the wgpu int8 graph's gate and up writing down's int8 input themselves (glu_q8.wgsl: one dispatch where the gate/up matvecs and the quantizer of silu(gate) * up were two): the kernel's parity against the CPU path and the token graph's, then greedy tg128 after a 512-token prompt with it off / on (4 rows a group) / on (8 rows a group), alternating in one binary; then the matvec shapes per class.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 150 ./gpu_parity --test-threads 1 --nocapture wgpu_gate_up wgpu_int8 token_graph_matches > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^wgpu|exit|panicked|test result|cases" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_GLU_Q8=0 CMF_WGPU_GLU_Q8=1 CMF_WGPU_GLU_ROWS=8" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((400-(SECONDS-start))) bash bench/ab.sh $OUT/ab-glu llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-glu/ab-runs.txt
echo "glu done at $((SECONDS-start)) s"
VARIANTS="CMF_WGPU_GLU_Q8=1 CMF_WGPU_MATVEC=tall=64x8 CMF_WGPU_MATVEC=wide=256x8 CMF_WGPU_MATVEC=tall=32x8x2,wide=128x8x2" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=1 DEADLINE=$((560-(SECONDS-start))) bash bench/ab.sh $OUT/ab-shapes llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-shapes/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
