#!/usr/bin/env bash
# Session 14 call 3: the RoPE-with-attention kernel test again (its K-row comparison now within 1e-6 instead of bit-equal), then the wgpu table of record with this session's defaults (RoPE folded into the attention split, the int8 combine writing O's input), REPS=2, the six shapes. Keeps the real model's first part in /tmp/cq for call 4.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/cq && cp gpuab/smol.part1 /tmp/cq/
for b in cortiq gpu_parity; do gunzip -c gpuab/$b.gz > ./$b; chmod +x ./$b; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=1
start=$SECONDS
timeout 60 ./gpu_parity --test-threads 1 --nocapture wgpu_attention_split > $OUT/parity-rope.log 2>&1; echo "exit $?" >> $OUT/parity-rope.log
grep -E "^test |exit|panicked|test result|RoPE" $OUT/parity-rope.log | head -20
CORTIQ_BIN=./cortiq BACKENDS=wgpu REPS=2 BANDWIDTH=3800 timeout 480 bash bench/gpu-all.sh $OUT/table-wgpu > $OUT/gpu-all-wgpu.log 2>&1; cat $OUT/table-wgpu/bench.md
rm -f $OUT/table-wgpu/*.log
echo "done at $((SECONDS-start)) s"
