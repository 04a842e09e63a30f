#!/usr/bin/env bash
# Session 14 call 10: the sampled token's candidates and draw in one readback: H200 parity (top-k cases, device draws, sampled sessions, the token graph's candidates), then tg128 --sample, the previous build (12f2432) against this one, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-prev gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 100 ./gpu_parity --test-threads 1 --nocapture top_k wgpu_draws sampled_tokens token_graph_candidates > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^test |exit|panicked|test result|wgpu:|cuda:" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq-prev ./cortiq" BENCH_ARGS=--sample BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sample smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-sample/ab.md
rm -f $OUT/ab-sample/ab.log
echo "done at $((SECONDS-start)) s"
