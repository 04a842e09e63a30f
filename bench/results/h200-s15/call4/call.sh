#!/usr/bin/env bash
# Session 15 call 4: a decode token's o projection merges the split-attention partials while staging (matvec_merge_*), so the attention ends without its merge step: parity (attention test, CUDA token graph against the CPU), then tg128 at -p 512: CMF_CUDA_O_MERGE=0 (the attention merges), the default rule, and 16 forced everywhere; alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda timeout 150 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
timeout 60 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches >> $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^==|^test |exit|panicked|test result|cuda .*: token|worst" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_CUDA_O_MERGE=0 CMF_X=0 CMF_CUDA_O_MERGE=16" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((500-(SECONDS-start))) bash bench/ab.sh $OUT/ab-o llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-o/ab.md
grep -iE "error|panick" $OUT/ab-o/ab.log | sort | uniq -c | head
rm -f $OUT/ab-o/ab.log
echo "done at $((SECONDS-start)) s"
