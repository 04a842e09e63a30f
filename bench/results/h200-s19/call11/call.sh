#!/usr/bin/env bash
# Session 19 call 11: QKV inside the attention split at 960 columns (the new synth shape smollm2-360m: SmolLM2-360M's geometry, 15 / 5 heads of 64) off / on, alternating, tg128 after a 512-token prompt, three rounds; q4_0 and q4_1: the default's cut (1024 columns) lies between the measured 576 and 2048.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in smollm2-360m:q4_0 smollm2-360m:q4_1; do [ -f $M/${s%%:*}-${s##*:}.gguf ] || ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 & done
wait
VARIANTS="CMF_WGPU_QKV_ATTN=0 CMF_WGPU_QKV_ATTN=1" BINS="./cortiq" BACKEND=wgpu PROMPT=512 GEN=128 REPS=1 ROUNDS=3 DEADLINE=200 MODELS_DIR=$M bash bench/ab.sh $OUT/ab-360m smollm2-360m:q4_0 smollm2-360m:q4_1 > /dev/null
cat $OUT/ab-360m/ab-runs.txt
rm -f $OUT/ab-*/ab.log
echo "done at $((SECONDS-start)) s"
