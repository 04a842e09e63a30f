#!/usr/bin/env bash
# Session 38, call 1: the split-K reduction's price (bench/probes/split_k_atomics.cu).
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -o /tmp/split_k_atomics bench/probes/split_k_atomics.cu > $OUT/build.txt 2>&1 || { cat $OUT/build.txt; exit 1; }
/tmp/split_k_atomics | tee $OUT/probe.md
/tmp/split_k_atomics > $OUT/probe2.md; cat $OUT/probe2.md | tail -9
