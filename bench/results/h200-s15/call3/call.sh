#!/usr/bin/env bash
# Session 15 call 3: what the split attention's merge tail costs: the publish with one thread's acq_rel fences instead of every thread's __threadfence (fence.sc), with and without the flat merge; the merge left out (profiling) and clusters of 16 as references; parity of the new publish; tg128 at -p 512, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_CUDA_CLUSTER_ATT=0 CMF_CUDA_DEFINES=CORTIQ_ATT_ACQREL,CORTIQ_ATT_FLAT_MERGE timeout 90 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^==|^test |exit|panicked|test result" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
export CMF_CUDA_CLUSTER_ATT=0
BINS="./cortiq" VARIANTS="CMF_X=0 CMF_CUDA_DEFINES=CORTIQ_ATT_ACQREL CMF_CUDA_DEFINES=CORTIQ_ATT_ACQREL,CORTIQ_ATT_FLAT_MERGE CMF_CUDA_DEFINES=CORTIQ_ATT_NO_MERGE CMF_CUDA_CLUSTER_ATT=1,CMF_CUDA_DEFINES=CORTIQ_ATT_CLUSTER16" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((520-(SECONDS-start))) bash bench/ab.sh $OUT/ab-att llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-att/ab.md
grep -iE "error|panick" $OUT/ab-att/ab.log | sort | uniq -c | head
rm -f $OUT/ab-att/ab.log
echo "done at $((SECONDS-start)) s"
