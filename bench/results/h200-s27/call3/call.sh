#!/usr/bin/env bash
# Session 27 call 3: the tails the timeline found (qkv on q8_0: 1-2 row pairs a warp; gate/up: 2 units a block, 224 blocks on 132 SMs): the row kernels' grids uncapped (CMF_CUDA_GRID_UNCAPPED: as many blocks as the work has, the hardware filling freed slots) for gate/up, qkv, or every row kernel: greedy tokens equal, timelines with block-time detail, then the A/B.
# The build: 0c3bd77 plus uncapped.diff beside this script (the knob existed only for this call).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
wait
echo "synth done at $((SECONDS-start)) s"
for v in "" gate_up_q8 qkv_rope gate_up_q8,qkv_rope,matvec_img; do
  for f in llama-8b-q8_0 llama-1b-q4_0; do
    CMF_CUDA_GRID_UNCAPPED=$v CMF_GPU=cuda timeout 60 ./cortiq run -m $M/$f.gguf --raw --temp 0 -n 48 "The quick brown fox" 2>/dev/null | md5sum | sed "s/ .*/ $f [$v]/"
  done
done
for v in "" gate_up_q8,qkv_rope; do
  CMF_CUDA_GRID_UNCAPPED=$v CORTIQ_BIN=./cortiq MODELS_DIR=$M timeout 100 bash bench/timeline.sh $OUT/timeline-${v:-base} llama-8b:q8_0 llama-8b:q4_0 | grep -v "^trace\|^$"
  echo "timeline [$v] at $((SECONDS-start)) s"
done
VARIANTS="CMF_CUDA_GRID_UNCAPPED= CMF_CUDA_GRID_UNCAPPED=gate_up_q8 CMF_CUDA_GRID_UNCAPPED=qkv_rope CMF_CUDA_GRID_UNCAPPED=gate_up_q8,qkv_rope,matvec_img" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((540-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
cd $OUT && tar czf all.tgz timeline-* ab && rm -rf timeline-* ab
echo "end at $((SECONDS-start)) s"
