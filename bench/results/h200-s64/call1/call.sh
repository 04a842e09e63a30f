#!/usr/bin/env bash
# Session 64, call 1. gpuab/: cortiq-base.gz = main (cfce4c6), and call2.sh's builds. On an H200: README's CUDA table by
# bench/gpu-all.sh on main's build (session 63's h200-table/call.sh: issue 8's six shapes plus
# the K-quant rows; tg128 after -p 512, REPS=2). On another card: call2/call.sh (run as a call of its own, first).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in
  *H200*) exec bash bench/results/h200-s63/h200-table/call.sh ;;
  *) exec bash bench/results/h200-s64/call2/call.sh ;;
esac
