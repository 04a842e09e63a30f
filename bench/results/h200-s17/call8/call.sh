#!/usr/bin/env bash
# Session 17 call 8: the wgpu attention chunk's max and sum by subgroup operations (attn_reduce_subgroup.wgsl: 2 barriers where the shared-memory halving took 8), in the decode split and the prompt attention: attention parity, then greedy tg128 / pp512 after a 512-token prompt before (cortiq-old: 7b6d869) and after, alternating.
set -u
cd "$(dirname "$0")/.."
for b in cortiq cortiq-old gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-1b:q4_0 smollm2-135m:q4_0; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
timeout 40 ./gpu_parity --test-threads 1 --nocapture wgpu_attention > $OUT/parity.log 2>&1; echo "exit $?" >> $OUT/parity.log
grep -E "exit|panicked|test result" $OUT/parity.log | head
wait
echo "parity done at $((SECONDS-start)) s"
BINS="./cortiq-old ./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((100-(SECONDS-start))) bash bench/ab.sh $OUT/ab-greedy smollm2-135m:q4_0 llama-1b:q4_0 > /dev/null
cat $OUT/ab-greedy/ab-runs.txt
echo "done at $((SECONDS-start)) s"
