#!/usr/bin/env bash
# Session 53, call 2: Q3_K (transcoded to Q6_K, kind 5) and IQ4_NL (to Q8_0, kind 2) on CUDA.
# 1. gpu_parity: the matmul harness (Q3_K and IQ4_NL now against the CPU's int8 kernels at
#    REL_Q8; Q2_K, IQ4_XS, Q5_1 still decline) and the token / prefill graph test (tiny q3_k
#    and tiny iq4_nl added on CUDA). Prediction: all pass; the harness runs 85 + 5 (Q3_K's
#    whole-superblock shapes) + 10 (IQ4_NL) = 100 cases.
# 2. Speed, llama-1b tg128 after pp512: q3_k should run at q6_k's speed (the same 7-bit device
#    layout) and iq4_nl at q8_0's (the same kind 2 bytes).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
specs="llama-1b:q3_k llama-1b:q6_k llama-1b:iq4_nl llama-1b:q8_0"
. bench/device-start.sh $specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 330 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|q3_k|iq4_nl" $OUT/parity.log | cut -c1-260
wait; echo "models at $((SECONDS-start)) s"
for s in $specs; do
  c=${s##*:}
  CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/llama-1b-$c.gguf -p 512 -n 128 -r 2 --bandwidth $bw > $OUT/bench-$c.txt 2>&1
  echo "== $c rc $?"; grep -E "\| (pp|tg)|graph|weight bytes" $OUT/bench-$c.txt | head -6
done
tar czf $OUT/bench.tgz -C $OUT $(cd $OUT && ls bench-*.txt) && rm $OUT/bench-*.txt
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
