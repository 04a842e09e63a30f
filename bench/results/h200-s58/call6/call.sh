#!/usr/bin/env bash
# Session 58, call 6 (the same H100): where the guard's cost goes, the prefill chunks'
# host / GPU split and GPU time per kind of dispatch (CMF_GRAPH_HOSTPROF=2), each build twice.
# The command as run (one line); its output, which the call wrote only to the terminal, is
# out/explain.txt.
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0; wait; for b in ./cortiq-5aee1e8 ./cortiq ./cortiq-5aee1e8 ./cortiq; do echo "== $b"; CMF_GRAPH_HOSTPROF=2 CMF_PROBE_CACHE=0 CMF_GPU=wgpu timeout 40 $b bench -m $M/llama-1b-q4_0.gguf -p 512 -n 4 -r 1 --backend wgpu --explain 2>&1 | grep -iE "prefill|pp512" | head -14; done; echo "end at $((SECONDS-start)) s"
