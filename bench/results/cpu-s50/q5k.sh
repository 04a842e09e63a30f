#!/usr/bin/env bash
# Session 50: Q5_K on the CPU before (OLD: a build of eff11c8, which decoded Q5_K rows to f32
# and dotted them with f32 activations) and after (NEW: this build, int8 activations through
# the AVX2 Q5_K kernel), on a synthesized llama-1b with every matrix in Q5_K, pp64 / tg16,
# two reps each, on the 2-core development machine. Usage: OLD=... NEW=... bash q5k.sh OUTDIR
set -eu
out=${1:?outdir}; mkdir -p "$out"
model=/tmp/l1b-q5k.gguf
[ -e $model ] || "$NEW" synth llama-1b --codec q5_k -o $model > /dev/null
lscpu | grep -E "Model name|^CPU\(s\)" > "$out/machine.txt"
for b in "$OLD" "$NEW"; do
  echo "== $b"; "$b" bench -m $model -p 64 -n 16 -r 2 --backend cpu 2>&1 | grep -E "^\|"
done | tee "$out/bench.md"
