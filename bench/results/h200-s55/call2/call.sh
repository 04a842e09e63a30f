#!/usr/bin/env bash
# Session 55, call 2: Q5_1 on CUDA as kind 8 (Q4_1's planar payload and scale words, plus a
# high-bit word a unit in kind 7's dp4a order; every row, tile, chain and graph kernel
# instantiated for it, embed_row and dequant_f16 decode it), and BF16 held as F16 (kind 3;
# both backends, gpu/transcode.rs).
# 1. gpu_parity: the matmul harness (Q5_1 now runs on CUDA against the CPU's int8 kernel,
#    BF16 against the CPU's f32 dot: prediction 115 + 10 + 10 = 135 codec/shape cases, as
#    lavapipe's wgpu run here), the upload / decline test (Q2_K now the undecoded codec), and
#    the token / prefill graph test (tiny q5_1, tiny bf16 and smollm2 q5_k_m, whose q / k / o /
#    gate / up are Q5_1, now among CUDA's shapes; prediction: pass, moved picks near-ties).
# 2. tg128 after -p 512: llama-1b q5_1 against q4_1 (bytes 6 / 5 a weight on the device:
#    prediction ~0.88x, as kind 7 against 6 gave 0.92x for 1.13x the bytes), smollm2 q5_k_m
#    against q4_k_m (launch-bound: prediction ~0.97x); smollm2 bf16 (F16 rows, f32
#    activations: 4x q4_0's bytes, ~270 MB a token; prediction near llama-1b q8_0's per-byte
#    rate, ~3 k tok/s on an H100).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
specs="llama-1b:q5_1 llama-1b:q4_1 smollm2-135m:q5_k_m smollm2-135m:q4_k_m smollm2-135m:bf16"
. bench/device-start.sh $specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 330 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes weights_upload_once_and_unsupported_codecs_decline_untouched token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|q5_1|q5_k_m|bf16" $OUT/parity.log | cut -c1-260
wait
for s in $specs; do
  CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/${s%%:*}-${s##*:}.gguf -p 512 -n 128 -r 2 --bandwidth $bw --explain > $OUT/bench-${s%%:*}-${s##*:}.txt 2>&1
  echo "== $s rc $? at $((SECONDS-start)) s"; grep -E "\| (pp|tg)|graph|weight bytes|declin" $OUT/bench-${s%%:*}-${s##*:}.txt | head -6
done
tar czf $OUT/bench.tgz -C $OUT $(cd $OUT && ls bench-*.txt) && rm $OUT/bench-*.txt
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
