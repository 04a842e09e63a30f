#!/usr/bin/env bash
# Session 14 call 5: wgpu sampled tokens drawn on the device and queued ahead: H200 parity (the draw kernel against the sampler's draw, sampled sessions with and without the draw spec, top-k, the token graph), then tg128 --sample, the previous build (HEAD 97b95a1, candidates only) against this one, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-base gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 100 ./gpu_parity --test-threads 1 --nocapture wgpu_draws sampled_tokens_drawn top_k token_graph_candidates > $OUT/parity-draw.log 2>&1; echo "exit $?" >> $OUT/parity-draw.log
grep -E "^test |exit|panicked|test result|wgpu:|cuda:" $OUT/parity-draw.log | head -30
timeout 200 ./gpu_parity --test-threads 1 --nocapture token_graph_matches > $OUT/parity-graph.log 2>&1; echo "exit $?" >> $OUT/parity-graph.log
wait
echo "parity done at $((SECONDS-start)) s"
grep -E "^test |exit|panicked|test result|agreement|ahead" $OUT/parity-graph.log | head -40
BINS="./cortiq-base ./cortiq" BENCH_ARGS=--sample BACKEND=wgpu PROMPT=64 GEN=128 REPS=2 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sample smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-sample/ab.md
rm -f $OUT/ab-sample/ab.log
echo "done at $((SECONDS-start)) s"
