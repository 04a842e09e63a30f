#!/usr/bin/env bash
# Session 16 call 1: the split attention prefetching the o projection's and gate/up's weights into L2 (CMF_CUDA_PREFETCH MiB; CORTIQ_PF_LATE: issued after the block's partial instead of before its wait); tg128 at -p 512, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
echo "models at $((SECONDS-start)) s"
CMF_CUDA_PREFETCH=40 CMF_GPU=cuda CMF_GRAPH_HOSTPROF=1 timeout 60 ./cortiq bench -m $M/llama-8b-q4_0.gguf -p 512 -n 128 --backend cuda --explain > $OUT/explain-pf40.txt 2>&1; echo "exit $?" >> $OUT/explain-pf40.txt
tail -25 $OUT/explain-pf40.txt
BINS="./cortiq" VARIANTS="CMF_X=0 CMF_CUDA_PREFETCH=8 CMF_CUDA_PREFETCH=24 CMF_CUDA_PREFETCH=40 CMF_CUDA_PREFETCH=24,CMF_CUDA_DEFINES=CORTIQ_PF_LATE" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-pf llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-pf/ab.md
grep -iE "error|panick" $OUT/ab-pf/ab.log | sort | uniq -c | head
rm -f $OUT/ab-pf/ab.log
echo "done at $((SECONDS-start)) s"
