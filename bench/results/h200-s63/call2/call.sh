#!/usr/bin/env bash
# Session 63, call 2, the warm H100 of call 1: Gemma 3's cuda row for README (call 1's build,
# 8 warps of 4 rows in the FP32 prompt-attention tiles), 3 reps.
. bench/device-start.sh gemma3-270m:q4_0 >/dev/null 2>&1; wait; which nsys ncu; CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=3350 REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=60 bash bench/gpu-all.sh $OUT/gemma gemma3-270m:q4_0 >/dev/null 2>&1; cat $OUT/gemma/bench.md; rm -f $OUT/gemma/*.log; uptime
