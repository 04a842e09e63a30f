#!/usr/bin/env bash
# Session 57, on the development VM (an AMD EPYC with AVX-512 VNNI and no AVX-VNNI since this
# session): the CPU int8 kernels with AVX2's maddubs + madd (CORTIQ_NO_VNNI=1) against the new
# AVX-512 VNNI tier (dpbusd on 256-bit registers; CORTIQ_DOT=auto is only a label, no code
# reads it), alternating, one thread (the VM's two vCPUs vary by +-10-20 % with two), on the
# reference models `cortiq pull` fetched. Writes OUT (default bench/results/cpu-s57/ab).
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --release --locked -q -p cortiq-cli
m=/tmp/cortiq-cpu-ab; mkdir -p $m
ln -sf "$(./target/release/cortiq pull gemma3-270m | tail -n 1)" $m/gemma3-q4_k_m.gguf
ln -sf "$(./target/release/cortiq pull smollm2-135m-instruct | tail -n 1)" $m/smollm2-q4_1.gguf
BINS=./target/release/cortiq BACKEND=cpu PROMPT=256 GEN=16 REPS=2 ROUNDS=${ROUNDS:-3} BENCH_ARGS="-t 1" MODELS_DIR=$m \
  VARIANTS="CORTIQ_NO_VNNI=1 CORTIQ_DOT=auto" bash bench/ab.sh "${OUT:-bench/results/cpu-s57/ab}" gemma3:q4_k_m smollm2:q4_1
grep -m1 "model name" /proc/cpuinfo; grep -o -m1 "avx512_vnni\|avx_vnni" /proc/cpuinfo | sort -u | tr "\n" " "; echo
cat "${OUT:-bench/results/cpu-s57/ab}/ab.md"
