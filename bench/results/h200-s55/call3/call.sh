#!/usr/bin/env bash
# (Run on 1db1a85's build: also the kind 7 builder through planar::q5_k_high_word, whose
# token-graph shapes, tiny and llama-1b q5_k_m, this test runs.)
# Session 55, call 3: F16 (and BF16, held as F16) weights take the prefill graph's cuBLAS
# path: `dequant_f16` copies F16's halves (its planar layout is the row-major matrix) where
# before an F16 layer weight kept the whole prompt on the f32 tiles.
# 1. gpu_parity's token / prefill graph test, narrowed to tiny bf16 (its 561- and 257-row
#    prompts now through cuBLAS; prediction: pass, prompt logits within ~1e-2 of the CPU
#    path), tiny q5_k_m (kind 7's rebuilt high words) and tiny q5_1 (device time left).
# 2. pp512 / tg128 of smollm2 bf16, cuBLAS on against CMF_CUDA_CUBLAS=0 (the
#    tiles, the path before) in one call: prediction pp512 well above call 2's 16.0 k on
#    smollm2 (the quantized kinds' cuBLAS path reads 140 k there), tg128 unchanged.
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
specs="smollm2-135m:bf16"
. bench/device-start.sh $specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CORTIQ_PARITY_SHAPES=tiny:bf16,tiny:q5_k_m,tiny:q5_1 timeout 120 ./gpu_parity --test-threads 1 --nocapture --exact token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|bf16" $OUT/parity.log | cut -c1-260
wait
for s in $specs; do
  f=$M/${s%%:*}-${s##*:}.gguf
  for cublas in 1 0; do
    CMF_CUDA_CUBLAS=$cublas CMF_GPU=cuda timeout 90 ./cortiq bench -m $f -p 512 -n 128 -r 2 --bandwidth $bw > $OUT/bench-${s%%:*}-${s##*:}-cublas$cublas.txt 2>&1
    echo "== $s cublas=$cublas rc $? at $((SECONDS-start)) s"; grep -E "\| (pp|tg)" $OUT/bench-${s%%:*}-${s##*:}-cublas$cublas.txt | head -2
  done
done
tar czf $OUT/bench.tgz -C $OUT $(cd $OUT && ls bench-*.txt) && rm $OUT/bench-*.txt
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
