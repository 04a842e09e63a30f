#!/usr/bin/env bash
# Session 50, call 2: call 1's token-graph test failed on tiny q5_k_m's one-row prompt
# (CUDA_ERROR_ILLEGAL_INSTRUCTION) after its 561- and 257-row prompts matched. Find the kernel:
# `cortiq bench` on tiny q5_k_m / q4_k_m at prompts of 1, 2 and 9 rows (the row-tile
# kernels, below the cuBLAS path's 16), launches blocking, then compute-sanitizer on the
# first that fails. Carries gpuab/cortiq.gz built with kind7.patch applied (not on main).
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh tiny:q5_k_m tiny:q4_k_m tiny:q5_k
wait
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
fail=""
for m in tiny-q5_k_m tiny-q4_k_m tiny-q5_k; do
  for p in 1 2 9; do
    CMF_GPU=cuda CUDA_LAUNCH_BLOCKING=1 timeout 60 ./cortiq bench -m $M/$m.gguf -p $p -n 4 -r 1 --backend cuda --explain > $OUT/$m-p$p.log 2>&1
    rc=$?; echo "$m p$p rc $rc: $(grep -E "tg4|pp$p |ILLEGAL|rror" $OUT/$m-p$p.log | head -3 | tr '\n' ' ')"
    [ $rc -ne 0 ] && [ -z "$fail" ] && fail="$m $p"
  done
done
san=$(ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$fail" ] && [ -n "$san" ]; then
  set -- $fail
  CMF_GPU=cuda timeout 300 $san --tool memcheck --print-limit 5 ./cortiq bench -m $M/$1.gguf -p $2 -n 1 -r 1 --backend cuda > $OUT/sanitizer.log 2>&1
  grep -E "=========" $OUT/sanitizer.log | head -30
fi
echo "end at $((SECONDS-start)) s"
