#!/usr/bin/env bash
# Session 25 call 3: the token graph's capture retried where another backend's synchronize invalidated it (the new test, three times), then call 2's parallel run of the CUDA tests twice.
set -u
cd "$(dirname "$0")/.."
for b in gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
start=$SECONDS
for i in 1 2 3; do
  timeout 100 ./gpu_parity --nocapture cuda_token_graph_captures_beside > $OUT/capture$i.log 2>&1
  echo "capture test run $i rc $? at $((SECONDS-start)) s"; grep -E "^cuda:|test result|panicked|invalidated" $OUT/capture$i.log | head -5
done
for i in 1 2; do
  timeout 150 ./gpu_parity cuda_ token_graph_candidates sampled_tokens_drawn_ahead > $OUT/parallel$i.log 2>&1
  echo "parallel run $i rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parallel$i.log)"; grep -E "SIGSEGV|panicked" $OUT/parallel$i.log | head -5
done
