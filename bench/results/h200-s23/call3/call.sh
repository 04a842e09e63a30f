#!/usr/bin/env bash
# Session 23 call 3: the split attention's merge as its own kernel (attention_merge, CORTIQ_ATT_MERGE=kernel, uncommitted: merge-kernel.diff) against the last block's merge: parity with the kernel (CUDA only: no .gl, so wgpu skips), then tg128 alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-135m:q4_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda ./cortiq gpu > /dev/null 2>&1 &
CORTIQ_ATT_MERGE=kernel timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches token_graph_matches_the_cpu_path cuda_int8_chain > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result|^test " $OUT/parity.log | head -60
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CORTIQ_ATT_MERGE=block CORTIQ_ATT_MERGE=kernel" BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-merge smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-merge/ab.md; tail -2 $OUT/ab-merge/ab.log; rm -f $OUT/ab-merge/ab.log
echo "done at $((SECONDS-start)) s"
