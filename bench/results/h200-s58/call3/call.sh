#!/usr/bin/env bash
# Session 58, call 3. Binaries in gpuab/ (`--features gpu,cuda`): cortiq-5aee1e8.gz (main:
# the K-quant row kernels rolled, the device-prefix test's fix), cortiq.gz and gpu_parity.gz
# (5aee1e8 plus wgpu's f16 operand guard, SPEC section 6: the prefill graph's quantizers and
# matrix-unit prompt attention set a word where a value they round to f16 is past its range,
# and the chunk runs again without the matrix units). .gl/ carried (wgpu up).
# 1. The guard's tests and the tests its change touches: wgpu_prefill_past_f16_range_follows_the_cpu_path
#    (new), the attention against the exact softmax, the int8 GEMMs (matrix units on and off),
#    the prefill graph chunks, the device prefix (call 2's failure, fixed in 5aee1e8).
# 2. What the guard costs: wgpu pp512, alternating 5aee1e8 / guard, llama-8b and llama-1b q4_0.
#    Prediction: one max and compare a unit in the quantizers, one compare a q value, one
#    4-byte map a chunk: under 1 % (CUDA's guard cost 2.4 % on llama-8b pp512, session 24).
# 3. Why call 2's first parity group found no wgpu adapter after the token-graph test: that
#    test again (six shapes) with one adapter-needing test after it, the process's open files,
#    threads and the card's memory sampled every 2 s, cut at 390 s (548 s of device time were
#    left, so README's CUDA table waits for another session's H200).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu; ulimit -n $(ulimit -n) (hard $(ulimit -Hn))"
. bench/device-start.sh llama-1b:q4_0 llama-8b:q4_0
(CMF_GPU=cuda ./cortiq gpu > $OUT/gpu-cuda.txt 2>&1 &)
export CORTIQ_REQUIRE_GPU=wgpu
timeout 150 ./gpu_parity --test-threads 1 --nocapture --exact wgpu_prefill_past_f16_range_follows_the_cpu_path wgpu_attention_matches_an_exact_softmax wgpu_int8_matvec_matches_the_cpu_int8_kernels wgpu_device_prefix_decodes_as_the_cpu_path > $OUT/guard.log 2>&1
echo "== guard tests rc $? at $((SECONDS-start)) s"; grep -E "^test |test result|panicked|rerun|q x 1e6|prefix of|cases matched|SKIP" -A1 $OUT/guard.log | grep -v "^--" | cut -c1-220 | head -30
gzip $OUT/guard.log
wait; echo "models at $((SECONDS-start)) s"
BINS="./cortiq-5aee1e8 ./cortiq" BACKEND=wgpu PROMPT=512 GEN=16 REPS=2 ROUNDS=2 MODELS_DIR=$M DEADLINE=$((230-(SECONDS-start))) bash bench/ab.sh $OUT/ab llama-8b:q4_0 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md; echo "ab at $((SECONDS-start)) s"
CORTIQ_PARITY_SHAPES=tiny:q4_0,smollm2-135m:q4_0,llama-1b:q4_0,tiny:q4_k_m,tiny:q6_k,tiny:q5_1 ./gpu_parity --test-threads 1 --nocapture --exact token_graph_matches_the_cpu_path weights_upload_once_and_unsupported_codecs_decline_untouched > $OUT/leak.log 2>&1 &
pid=$!
while kill -0 $pid 2>/dev/null; do
  echo "$((SECONDS-start)) s: fds $(ls /proc/$pid/fd 2>/dev/null | wc -l), threads $(ls /proc/$pid/task 2>/dev/null | wc -l), rss $(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null) kB, card $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)" >> $OUT/leak-samples.txt
  [ $((SECONDS-start)) -gt 390 ] && { kill $pid; echo "cut at 390 s"; }
  sleep 2
done
echo "== leak run at $((SECONDS-start)) s"; grep -E "test result|panicked|graph vs CPU|no GPU adapter" $OUT/leak.log | cut -c1-200
awk 'NR % 8 == 1' $OUT/leak-samples.txt; tail -n 2 $OUT/leak-samples.txt
gzip $OUT/leak.log
