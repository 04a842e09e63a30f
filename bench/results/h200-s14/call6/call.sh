#!/usr/bin/env bash
# Session 14 call 6: carries the real model's first part, this session's final cortiq and the reference-test binary to /tmp/cq for call 7 (the tool carries at most ~64 MiB a call); prints `cortiq gpu` on the H200.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/cq && cp gpuab/smol.part1 /tmp/cq/
for b in cortiq reference; do gunzip -c gpuab/$b.gz > /tmp/cq/$b; chmod +x /tmp/cq/$b; done
. bench/gpu-env.sh
CMF_GPU=cuda /tmp/cq/cortiq gpu 2>&1 | tail -25
ls -la /tmp/cq
