#!/usr/bin/env bash
# Session 20 call 6: carries the real default model's first part and this build's cortiq to /tmp/cq for call 7.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/cq && cp gpuab-p1/smol.part1 /tmp/cq/
gunzip -c gpuab-p1/cortiq.gz > /tmp/cq/cortiq; chmod +x /tmp/cq/cortiq
ls -la /tmp/cq
