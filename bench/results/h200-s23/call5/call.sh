#!/usr/bin/env bash
# Session 23 call 5: the merge kernel in groups of head_dim threads (up to 256 a block, group g chunks g, g + groups, ..., one round of loads up to groups x 16 chunks; the groups combined in shared memory) against call 4's build (cortiq-m16: one group, rounds of 16 chunks), which lost 3 % on smollm2 at -p 2000: parity on CUDA (no .gl: wgpu skips), then tg128 alternating at -p 2000 and -p 512.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-m16 gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda ./cortiq-m16 gpu > /dev/null 2>&1 &
timeout 170 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches token_graph_matches_the_cpu_path cuda_int8_chain > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "attention|exit|panicked|test result|^test |graph vs" $OUT/parity.log | head -50
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq-m16 ./cortiq" BACKEND=cuda PROMPT=2000 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((300-(SECONDS-start))) bash bench/ab.sh $OUT/ab-p2000 smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 > /dev/null
cat $OUT/ab-p2000/ab.md; rm -f $OUT/ab-p2000/ab.log
BINS="./cortiq-m16 ./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((390-(SECONDS-start))) bash bench/ab.sh $OUT/ab-p512 smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-p512/ab.md; rm -f $OUT/ab-p512/ab.log
echo "done at $((SECONDS-start)) s"
