#!/usr/bin/env bash
# Session 62's fifth call (run as one command line on the warm machine of call 4, same binaries,
# carrying gpuab/ and .gl/): README's Gemma table again, call 4's wgpu row having varied
# by +-9133 tok/s in pp512; uptime before and after (load average 5.9 on the machine before
# the table started, not ours).
. bench/device-start.sh gemma3-270m:q4_0; wait; uptime
CORTIQ_BIN=./cortiq BACKENDS="cuda wgpu cpu" BANDWIDTH=3350 REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=100 timeout 200 bash bench/gpu-all.sh $OUT/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat $OUT/gemma/bench.md; uptime
