#!/usr/bin/env bash
# Session 53, call 3: IQ4_XS on CUDA as Q8_0 (kind 2) with each block's scale rounded to f16.
# Not run in session 53 (no device time left for it): apply ../iq4xs-cuda.patch (layout.rs,
# graph.rs's message, gpu_parity.rs, docs/cuda.md, README) to main, build the binaries into
# gpuab/ as README's GPU section says, then run this; land the patch if it passes.
# 1. gpu_parity: the matmul harness (IQ4_XS now against the CPU's int8 kernel at REL_F16,
#    1e-3 of |w| |x|: the rounding moves a dot by at most 2^-11 of sum |w_k x_k|) and the token /
#    prefill graph test with tiny iq4_xs added. Prediction: pass; the harness 100 + 5 cases.
# 2. Speed, llama-1b tg128 after -p 512: iq4_xs at q8_0's speed (the same kind 2 bytes).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in *H200*) bw=4350 ;; *) bw=3350 ;; esac
specs="llama-1b:iq4_xs llama-1b:q8_0"
. bench/device-start.sh $specs
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
timeout 330 ./gpu_parity --test-threads 1 --nocapture --exact matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1
echo "== parity rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|codec/shape|iq4_xs" $OUT/parity.log | cut -c1-260
wait; echo "models at $((SECONDS-start)) s"
for s in $specs; do
  c=${s##*:}
  CMF_GPU=cuda timeout 60 ./cortiq bench -m $M/llama-1b-$c.gguf -p 512 -n 128 -r 2 --bandwidth $bw > $OUT/bench-$c.txt 2>&1
  echo "== $c rc $?"; grep -E "\| (pp|tg)|graph|weight bytes" $OUT/bench-$c.txt | head -6
done
tar czf $OUT/bench.tgz -C $OUT $(cd $OUT && ls bench-*.txt) && rm $OUT/bench-*.txt
gzip $OUT/parity.log
echo "end at $((SECONDS-start)) s"
