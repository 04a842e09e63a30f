#!/usr/bin/env bash
# Session 25 call 4: the capture test with a third thread bringing backends up and dropping them (module loads during captures); then the CUDA tests in parallel with --nocapture, so the SIGSEGV handler's stack reaches the log (call 3's second parallel run aborted silently).
set -u
cd "$(dirname "$0")/.."
for b in gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
start=$SECONDS
for i in 1 2; do
  timeout 120 ./gpu_parity --nocapture cuda_token_graph_captures_beside > $OUT/capture$i.log 2>&1
  echo "capture test run $i rc $? at $((SECONDS-start)) s"; grep -E "^cuda:|test result|panicked|invalidated|SIGSEGV" $OUT/capture$i.log | head -5
done
for i in 1 2 3 4; do
  [ $((SECONDS-start)) -lt 330 ] || break
  RUST_BACKTRACE=1 timeout 120 ./gpu_parity --nocapture cuda_ token_graph_candidates sampled_tokens_drawn_ahead > $OUT/parallel$i.log 2>&1
  echo "parallel run $i rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parallel$i.log)"; grep -E -A30 "SIGSEGV|panicked" $OUT/parallel$i.log | grep -v "^ *at /rustc" | head -45
done
