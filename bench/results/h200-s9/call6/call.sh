#!/usr/bin/env bash
# Session 9 call 6: the wgpu per-op path's batch-1 matmuls on the int8-activation kernels (new) vs f32 (base): per-op decode of llama-1b q4_0 with --explain (graphs off for decode), then parity (matmul harness, QKV/FFN, per-op greedy).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-base.gz > ./cortiq-base; gunzip -c gpuab/cortiq-new.gz > ./cortiq-new; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq-base cortiq-new gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
./cortiq-new synth llama-1b --codec q4_0 -o $M/llama-1b-q4_0.gguf 2>/dev/null
for b in base new base new; do CMF_GPU=wgpu CMF_GPU_WGPU_GRAPH=prefill CMF_PROBE_CACHE=0 timeout 60 ./cortiq-$b bench -m $M/llama-1b-q4_0.gguf -p 64 -n 64 -r 1 --backend wgpu --explain >> $OUT/perop-$b.txt 2>&1; grep -E "tg64 " $OUT/perop-$b.txt | tail -1 | sed "s/^/$b /"; done
( timeout 150 ./gpu_parity --test-threads 1 --nocapture matmul_matches qkv_batch wgpu_per_op_greedy > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|matched|greedy" $OUT/parity.log | head -20
tail -40 $OUT/perop-new.txt
