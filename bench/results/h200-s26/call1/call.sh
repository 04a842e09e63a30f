#!/usr/bin/env bash
# Session 26 call 1: the split attention's V rows in shared memory by cp.async (no V registers, 3 blocks a SM), and its exps computed where used (two barriers fewer): parity under the switches, ncu of the attention kernels on llama-8b q8_0, then the A/B of the variants in one binary.
set -u
cd "$(dirname "$0")/.."
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
ALL=CORTIQ_ATT_VSMEM,CORTIQ_ATT_3BLOCKS,CORTIQ_ATT_FEWER_BARRIERS
CMF_CUDA_DEFINES=$ALL timeout 100 ./gpu_parity --nocapture cuda_attention_matches_an_exact_softmax token_graph_matches_the_cpu_path > $OUT/parity-all.log 2>&1
echo "parity (all switches) rc $? at $((SECONDS-start)) s: $(grep -E '^test result' $OUT/parity-all.log)"; grep -E "panicked|FAILED|^cuda .*(graph vs CPU|greedy)|worst" $OUT/parity-all.log | head -20
wait
echo "synth done at $((SECONDS-start)) s"
for v in "" CORTIQ_ATT_VSMEM,CORTIQ_ATT_3BLOCKS; do
  CMF_CUDA_DEFINES=$v CMF_GPU=cuda timeout 100 /usr/local/cuda/bin/ncu --clock-control none -k regex:"attention_h128|attention_merge" --launch-skip 640 --launch-count 8 --section LaunchStats --section Occupancy --metrics gpu__time_duration.sum ./cortiq bench -m $M/llama-8b-q8_0.gguf -p 512 -n 16 -r 1 --backend cuda > $OUT/ncu-att-${v:-base}.txt 2>&1
  echo "ncu [$v] exit $? at $((SECONDS-start)) s"; grep -E "^  [a-z_0-9]+ \(|gpu__time_duration|Registers Per|Waves Per|Achieved Occupancy|Theoretical Occupancy|Block Limit" $OUT/ncu-att-${v:-base}.txt | head -24
done
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_ATT_VSMEM,CORTIQ_ATT_3BLOCKS CMF_CUDA_DEFINES=$ALL CMF_CUDA_DEFINES=CORTIQ_ATT_FEWER_BARRIERS" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 DEADLINE=$((560-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 llama-1b:q4_0 smollm2-135m:q4_0
cat $OUT/ab/ab.md; tail -3 $OUT/ab/ab-runs.txt
echo "end at $((SECONDS-start)) s"
