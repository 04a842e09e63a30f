#!/usr/bin/env bash
# Session 15 call 1: CUDA decode attention: parity of the flat merge and the 3-blocks-a-SM bounds (define-selected), then tg128 at -p 512 of: the split as it is, its merge left out (profiling), the flat merge, 3 blocks a SM, both, and attention skipped; alternating in one process set.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
for d in CORTIQ_ATT_FLAT_MERGE CORTIQ_ATT_3BLOCKS CORTIQ_ATT_FLAT_MERGE,CORTIQ_ATT_3BLOCKS; do
  echo "== $d" >> $OUT/parity.log
  CMF_CUDA_DEFINES=$d timeout 60 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches >> $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
done
echo "== token graph, flat merge" >> $OUT/parity.log
CMF_CUDA_DEFINES=CORTIQ_ATT_FLAT_MERGE,CORTIQ_ATT_3BLOCKS CMF_GPU=cuda timeout 90 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path >> $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^==|^test |exit|panicked|test result" $OUT/parity.log | head -30
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_X=0 CMF_CUDA_DEFINES=CORTIQ_ATT_NO_MERGE CMF_CUDA_DEFINES=CORTIQ_ATT_FLAT_MERGE CMF_CUDA_DEFINES=CORTIQ_ATT_3BLOCKS CMF_CUDA_DEFINES=CORTIQ_ATT_FLAT_MERGE,CORTIQ_ATT_3BLOCKS CMF_GRAPH_SKIP=attn" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((500-(SECONDS-start))) bash bench/ab.sh $OUT/ab-att llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0 > /dev/null
cat $OUT/ab-att/ab.md
grep -iE "error|panick" $OUT/ab-att/ab.log | sort | uniq -c | head
rm -f $OUT/ab-att/ab.log
echo "done at $((SECONDS-start)) s"
