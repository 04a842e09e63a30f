#!/usr/bin/env bash
# Session 26 call 4: where the landed attention_h128's ~9 us (alone) go on llama-8b q8_0: ncu's speed-of-light, memory, warp-state (stall reasons) and scheduler sections, caches not flushed, a decode token well past the prompt (call 2's run was too short for its launch-skip).
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/cortiq.gz > ./cortiq; chmod +x ./cortiq
. bench/gpu-env.sh
M=/tmp/cortiq-models; mkdir -p $M
start=$SECONDS
./cortiq synth llama-8b --codec q8_0 -o $M/llama-8b-q8_0.gguf >/dev/null 2>&1
echo "synth done at $((SECONDS-start)) s"
CMF_GPU=cuda timeout 150 /usr/local/cuda/bin/ncu --clock-control none --cache-control none -k regex:"attention_h128|attention_merge" --launch-skip 640 --launch-count 4 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__t_bytes.sum ./cortiq bench -m $M/llama-8b-q8_0.gguf -p 512 -n 40 -r 1 --backend cuda > $OUT/ncu-att-detail.txt 2>&1
echo "ncu exit $? at $((SECONDS-start)) s"
grep -E "^  [a-z_0-9]+ \(|gpu__time|dram__bytes|lts__t_bytes|l1tex__t_bytes|Duration|Memory Throughput|DRAM Throughput|Warp Cycles Per Issued|Issued Warp|No Eligible|Active Warps|Registers Per|Waves Per|Achieved Occ" $OUT/ncu-att-detail.txt | head -60
grep -iE "stall|est\. speedup|scoreboard|barrier" $OUT/ncu-att-detail.txt | head -30
