#!/usr/bin/env bash
# Session 49's call 3 again, on an H200 only (it exits at once on any other card): README's
# table on the build that landed as 9e57397, then the Q4_K layout A/B (./cortiq-q41,
# 3bcb308, against ./cortiq), carried in gpuab/ as call 3 was.
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$gpu" in *H200*) ;; *) echo "not an H200: $gpu"; exit 3 ;; esac
exec bash "$(dirname "$0")/../call3/call.sh"
