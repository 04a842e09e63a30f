#!/usr/bin/env bash
# Session 26 call 2: where attention_h128's ~10 us (ncu, alone) go: memory and stall sections on llama-8b q8_0 with caches flushed and not; ncu's time of every decode kernel of a few tokens; then the A/B of the V-in-shared-memory variant for 128-wide heads only.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
for s in llama-8b:q8_0 llama-8b:q4_0; do
  ./cortiq synth ${s%%:*} --codec ${s##*:} -o $M/${s%%:*}-${s##*:}.gguf >/dev/null 2>&1 &
done
wait
echo "synth done at $((SECONDS-start)) s"
NCU="/usr/local/cuda/bin/ncu --clock-control none"
for cc in all none; do
  CMF_GPU=cuda timeout 100 $NCU --cache-control $cc -k regex:"attention_h128" --launch-skip 640 --launch-count 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,sm__cycles_active.avg ./cortiq bench -m $M/llama-8b-q8_0.gguf -p 512 -n 8 -r 1 --backend cuda > $OUT/ncu-att-detail-$cc.txt 2>&1
  echo "ncu detail cache $cc exit $? at $((SECONDS-start)) s"
done
grep -E "gpu__time|dram__bytes|lts__t_bytes|l1tex__t_bytes|sm__cycles|Duration|Memory Throughput|DRAM Throughput|Stall|Warp Cycles Per Issued|Issued Warp|No Eligible|One or More" $OUT/ncu-att-detail-none.txt | head -40
CMF_GPU=cuda timeout 150 $NCU --cache-control none -k regex:"qkv_rope_k[0-9]_r|attention_h128|attention_merge|matvec_|gate_up_(silu|q8)_k[0-9]_r" --launch-skip 400 --launch-count 400 --metrics gpu__time_duration.sum ./cortiq bench -m $M/llama-8b-q8_0.gguf -p 512 -n 8 -r 1 --backend cuda > $OUT/ncu-token.txt 2>&1
echo "ncu token exit $? at $((SECONDS-start)) s"
grep -E "^  [a-z_0-9]+ \(|gpu__time_duration" $OUT/ncu-token.txt | paste - - | awk '{s[$1]+=$(NF); n[$1]++} END {for (k in s) printf "%s n=%d mean=%.2f us sum=%.1f\n", k, n[k], s[k]/n[k], s[k]}'
VARIANTS="CMF_CUDA_DEFINES= CMF_CUDA_DEFINES=CORTIQ_ATT_VSMEM,CORTIQ_ATT_3BLOCKS" \
  BINS="./cortiq" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=3 DEADLINE=$((540-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0
cat $OUT/ab/ab.md
echo "end at $((SECONDS-start)) s"
