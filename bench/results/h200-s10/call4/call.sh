#!/usr/bin/env bash
# Session 10 call 4: the wgpu per-op FFN job with int8 activations at batch 1 (new: x quantized on the host, the hidden state on the device, both by the CPU's rule) against f32 (base): per-op decode of llama-1b q4_0 with --explain (graphs off for decode), then parity (FFN and matmul harness, per-op greedy); then, from the branch s10-persistent-token-kernel, what a stage boundary costs: a captured PDL kernel chain against a grid barrier in one launch.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq-base.gz > ./cortiq-base; gunzip -c gpuab/cortiq-new.gz > ./cortiq-new; gunzip -c gpuab/gpu_parity.gz > ./gpu_parity; chmod +x cortiq-base cortiq-new gpu_parity
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
./cortiq-new synth llama-1b --codec q4_0 -o $M/llama-1b-q4_0.gguf 2>/dev/null
for b in base new base new; do CMF_GPU=wgpu CMF_GPU_WGPU_GRAPH=prefill CMF_PROBE_CACHE=0 timeout 60 ./cortiq-$b bench -m $M/llama-1b-q4_0.gguf -p 64 -n 64 -r 1 --backend wgpu --explain >> $OUT/perop-$b.txt 2>&1; echo "$b $(grep -E 'tg64 ' $OUT/perop-$b.txt | tail -1) $(grep -E '^\| ffn ' $OUT/perop-$b.txt | tail -1)"; done
( timeout 200 ./gpu_parity --test-threads 1 --nocapture matmul_matches qkv_batch wgpu_per_op_greedy > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log )
grep -E "^test |parity exit|panicked|test result|matched|agreement" $OUT/parity.log | head -20
gunzip -c gpuab/gpu_parity_branch.gz > ./gpu_parity_branch; chmod +x gpu_parity_branch
( timeout 60 ./gpu_parity_branch --test-threads 1 --nocapture cuda_sync_costs > $OUT/sync.log 2>&1; echo "sync exit $?" >> $OUT/sync.log )
grep -E "sync costs|sync exit|panicked" $OUT/sync.log
