#!/usr/bin/env bash
# Session 24 call 2: the guard as one flag a thread (dequant, flash), against main (cortiq-old) and call 1's per-value form (cortiq-v1); CUDA parity with wgpu left to SKIP (call 1 found no Vulkan adapter).
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old cortiq-v1 gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh

M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 llama-8b:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 300 ./gpu_parity --test-threads 1 --nocapture cuda_prefill_past_f16_range_follows_the_cpu_path cuda_attention_matches prefill_graph_chunks_match_the_cpu_prefill token_graph_matches_the_cpu_path cuda_prefill_gemm_probe > $OUT/parity.log 2>&1
echo "parity rc $? at $((SECONDS-start)) s"
grep -E "^test |test result|f16|panicked|SKIP|cuda.*(relative|L2)" $OUT/parity.log | head -60
wait
BINS="./cortiq-old ./cortiq-v1 ./cortiq" BACKEND=cuda PROMPT=512 GEN=16 REPS=2 ROUNDS=2 DEADLINE=$((480-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab-p512 llama-8b:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-p512/ab.md; rm -f $OUT/ab-p512/ab.log
echo "done at $((SECONDS-start)) s"
