#!/usr/bin/env bash
# For the next session (see NOTES.md, session 51): does cuda_fused_ffn_matches_the_cpu_path
# fail its greedy-count check on an H100 with a build that has neither kind 7 nor the
# unrolled prologue? Carries gpuab/gpu_parity_main.gz (0669216's gpu_parity) and
# gpuab/gpu_parity.gz (main's); runs the test with each, one after the other (not side by
# side: session 51's call 2 ran out of its 170 s compiling twice at once). Prediction: both
# print llama-8b q4_0 at 18/24 (two launches 19/24) on an H100, so the check is the card's.
# Build each: `cargo test --release --features gpu,cuda -p cortiq-engine --test gpu_parity
# --no-run` (0669216's in a `git worktree`), strip, gzip into gpuab/ under those names.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh
echo "card: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
for b in gpu_parity_main gpu_parity; do
  timeout 280 ./$b --test-threads 1 --nocapture --exact cuda_fused_ffn_matches_the_cpu_path > $OUT/$b.log 2>&1
  echo "== $b rc $?"; grep -E "fused FFN vs CPU|panicked|test result" $OUT/$b.log
done
echo "end at $((SECONDS-start)) s"
