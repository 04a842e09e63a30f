#!/usr/bin/env bash
# Session 60's fifth call (on call 4's warm H100, gpuab/ as call 4's): README's Gemma rows
# from df75bc2's build (q/k norms, RoPE and mirror append fused; call 4's GELU-on-load form
# measured slower and was reverted), bench/gpu-all.sh on cpu / wgpu / cuda, three reps.
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh gemma3-270m:q4_0; wait; mkdir -p /tmp/c5
CORTIQ_BIN=./cortiq-df75bc2 BACKENDS="cpu wgpu cuda" BANDWIDTH=3350 REPS=3 MODELS_DIR=$M BENCH_TIMEOUT=150 timeout 330 bash bench/gpu-all.sh /tmp/c5/gemma gemma3-270m:q4_0 > /dev/null 2>&1
cat /tmp/c5/gemma/bench.md; tar czf $OUT/out.tgz -C /tmp/c5 .
