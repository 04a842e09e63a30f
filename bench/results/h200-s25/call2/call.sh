#!/usr/bin/env bash
# Session 25 call 2: the CUDA decode anatomy (bench/anatomy.sh: stage ablation and the row kernels' parts) on the current build, three shapes; first the CUDA parity tests in parallel once (the SIGSEGV seen with wgpu + CUDA alive in one process: does CUDA alone crash?).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-8b:q8_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for i in 1; do
  timeout 150 ./gpu_parity cuda_ token_graph_candidates sampled_tokens_drawn_ahead > $OUT/parallel$i.log 2>&1
  echo "parallel run $i rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parallel$i.log)"; grep -E "SIGSEGV|panicked" $OUT/parallel$i.log | head -5
done
wait
echo "synth done at $((SECONDS-start)) s"
MODELS_DIR=$M CORTIQ_BIN=./cortiq bash bench/anatomy.sh $OUT/anatomy llama-8b:q4_0 llama-8b:q8_0 smollm2-135m:q4_0 > /dev/null 2>&1
cat $OUT/anatomy/anatomy.md
echo "done at $((SECONDS-start)) s"
