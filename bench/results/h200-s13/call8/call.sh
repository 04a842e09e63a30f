#!/usr/bin/env bash
# Session 13 call 8: the sampler's candidates picked on the device by wgpu too (topk_*.wgsl): the top-k parity tests (both backends' kernels, and the token graph's candidates against its own logits), then wgpu sampled decode (bench --sample, tg128) main 0c89cfd (logits back, the pick on the host) vs the new binary, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq-multi cortiq-topk gpu_parity-topk; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
( timeout 120 ./gpu_parity-topk --test-threads 1 --nocapture top_k candidates > $OUT/parity.log 2>&1; echo "parity exit $?" >> $OUT/parity.log ) &
for s in llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq-topk synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "parity done at $((SECONDS-start)) s"
grep -E "^test |test result|parity exit|panicked|cases|candidates equal" $OUT/parity.log | head -20
BINS="./cortiq-multi ./cortiq-topk" BACKEND=wgpu BENCH_ARGS=--sample PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((170-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sample-wgpu smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-sample-wgpu/ab.md
echo "done at $((SECONDS-start)) s"
