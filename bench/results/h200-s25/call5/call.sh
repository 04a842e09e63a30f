#!/usr/bin/env bash
# Session 25 call 5: each CUDA backend in a context of its own (not the primary one), cuBLAS bound to it: the CUDA tests in parallel (calls 3-4: SIGSEGV in cuCtxSynchronize under cublasDestroy), the capture test, a decode speed check, then the whole harness one test at a time.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
./cortiq synth smollm2-135m --codec q4_0 -o $M/smollm2-135m-q4_0.gguf >/dev/null 2>&1 &
for i in 1 2 3; do
  RUST_BACKTRACE=1 timeout 90 ./gpu_parity --nocapture cuda_ token_graph_candidates sampled_tokens_drawn_ahead > $OUT/parallel$i.log 2>&1
  echo "parallel run $i rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parallel$i.log)"; grep -E -A20 "SIGSEGV|panicked" $OUT/parallel$i.log | head -25
  grep -E "^cuda: .*sequences" $OUT/parallel$i.log
done
wait
CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/smollm2-135m-q4_0.gguf -p 512 -n 128 -r 2 --backend cuda 2>&1 | grep -E "^\| smollm|run "
echo "bench at $((SECONDS-start)) s"
[ $((SECONDS-start)) -lt 220 ] && timeout 200 ./gpu_parity --test-threads 1 --nocapture > $OUT/parity.log 2>&1; echo "parity rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity.log)"
grep -E "panicked|FAILED|^cuda .*(graph vs CPU|greedy)|^cuda: " $OUT/parity.log | head -30
