#!/usr/bin/env bash
# Session 15 call 2: CUDA decode attention by thread-block clusters (8 blocks a head; 16 by a define): parity against the exact softmax (cluster and split paths), the CUDA token graph against the CPU, then tg128 at -p 512: the split kernel (CMF_CUDA_CLUSTER_ATT=0), clusters of 8, clusters of 16; then one longer context (llama-1b -p 2000).
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 90 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
echo "== clusters of 16" >> $OUT/parity.log
CMF_CUDA_DEFINES=CORTIQ_ATT_CLUSTER16 timeout 60 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches >> $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
echo "== token graph" >> $OUT/parity.log
CMF_GPU=cuda timeout 150 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path >> $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^==|^test |exit|panicked|test result" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_CUDA_CLUSTER_ATT=0 CMF_X=0 CMF_CUDA_DEFINES=CORTIQ_ATT_CLUSTER16" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((470-(SECONDS-start))) bash bench/ab.sh $OUT/ab-att llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-att/ab.md
grep -iE "error|panick" $OUT/ab-att/ab.log | sort | uniq -c | head
rm -f $OUT/ab-att/ab.log
BINS="./cortiq" VARIANTS="CMF_CUDA_CLUSTER_ATT=0 CMF_X=0 CMF_CUDA_DEFINES=CORTIQ_ATT_CLUSTER16" BACKEND=cuda PROMPT=2000 GEN=128 REPS=1 ROUNDS=1 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-long llama-1b:q4_0 > /dev/null
cat $OUT/ab-long/ab.md
rm -f $OUT/ab-long/ab.log
echo "done at $((SECONDS-start)) s"
