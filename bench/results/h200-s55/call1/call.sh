#!/usr/bin/env bash
# Session 55, call 1, main = 3710386's build (session 54's last; its CUDA side last run on
# 9ca683a's build). On an H200: session 54's prepared table call (h200-s54/call4: README's
# CUDA table, issue 8's six shapes + the Q4_K_M / Q5_K_M rows, and the matmul harness + token
# graph test). On any other card: session 54's call 7 (the matmul harness and the upload /
# decline test on this build; prediction: pass, 115 codec/shape cases, as call 6).
set -u
cd "$(dirname "$0")/../../../.."
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "card: $gpu"
case "$gpu" in
  *H200*) exec bash bench/results/h200-s54/call4/call.sh ;;
  *) exec bash bench/results/h200-s54/call7/call.sh ;;
esac
