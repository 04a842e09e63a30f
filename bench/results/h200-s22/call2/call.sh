#!/usr/bin/env bash
# Session 22 call 2: the CUDA int8 chain's two hidden links (attention -> o, gate/up -> down) apart and together: bit-identity of the logits against the graph without the chain, the token graph against the CPU, then tg128 after a 512-token prompt, alternating CMF_CUDA_INT8_CHAIN=0 / attn / glu / attn,glu.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q4_0 llama-1b:q4_0 llama-1b:q8_0 smollm2-135m:q4_0 smollm2-135m:q8_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
CMF_GPU=cuda ./cortiq gpu 2>&1 | grep -i "chain"
CMF_GPU=cuda timeout 200 ./gpu_parity --test-threads 1 --nocapture cuda_int8_chain token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "^cuda|exit|panicked|test result" $OUT/parity.log | head -40
wait
echo "parity done at $((SECONDS-start)) s"
VARIANTS="CMF_CUDA_INT8_CHAIN=0 CMF_CUDA_INT8_CHAIN=attn CMF_CUDA_INT8_CHAIN=glu CMF_CUDA_INT8_CHAIN=attn,glu" BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) bash bench/ab.sh $OUT/ab-chain smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 smollm2-135m:q8_0 llama-1b:q8_0 > /dev/null
cat $OUT/ab-chain/ab.md
grep -iE "error|panick" $OUT/ab-chain/ab.log | sort | uniq -c | head
rm -f $OUT/ab-chain/ab.log
echo "done at $((SECONDS-start)) s"
