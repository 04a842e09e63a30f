#!/usr/bin/env bash
# Session 17 call 4: the wgpu attention chunk's K and V loads issued together (chunk_load: every invocation's K vec4s of its position and V vec4s of its group into registers before any is used; the split and the prompt attention): wgpu parity (attention against an exact softmax, RoPE folded, the token and prefill graphs against the CPU), then greedy and sampled tg128 / pp512 before (cortiq-old: 37bf1db) and after, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 200 ./gpu_parity --test-threads 1 --nocapture wgpu_attention token_graph_matches_the_cpu_path prefill_graph_chunks > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^test |exit|panicked|test result|argmax agreement|relative L2 .* against the CPU|heads x 128" $OUT/parity.log | head -40
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((330-(SECONDS-start))) bash bench/ab.sh $OUT/ab-greedy smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-greedy/ab.md
grep -iE "error|panick" $OUT/ab-greedy/ab.log | sort | uniq -c | head
rm -f $OUT/ab-greedy/ab.log
echo "greedy done at $((SECONDS-start)) s"
BENCH_ARGS="--sample" BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=1 DEADLINE=$((420-(SECONDS-start))) bash bench/ab.sh $OUT/ab-sampled smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-sampled/ab.md
rm -f $OUT/ab-sampled/ab.log
echo "done at $((SECONDS-start)) s"
