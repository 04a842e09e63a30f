#!/usr/bin/env bash
# Sourced at the top of a device call script, from the repository root: unpacks the binaries
# the call carried in gpuab/ (NAME.gz -> ./NAME, executable), sets up the GPU machine's
# environment (gpu-env.sh), and starts synthesizing each SHAPE:CODEC given into $M
# ($MODELS_DIR, default /tmp/cortiq-models; one a warm machine kept from an earlier call is
# reused: synth renames a finished file into place) in the background, with ./cortiq-base where it
# was carried, else ./cortiq; `wait` for them. Sets M and start (the call's $SECONDS), and
# CORTIQ_REQUIRE_GPU=cuda unless set: the parity tests fail where CUDA does not come up (the
# machine's Vulkan does not, so wgpu's SKIP).
# Usage: . bench/device-start.sh SHAPE:CODEC ...
for gz in gpuab/*.gz; do
  name=$(basename "$gz" .gz)
  gunzip -c "$gz" > "./$name" && chmod +x "./$name"
done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=${CORTIQ_REQUIRE_GPU:-cuda}
M=${MODELS_DIR:-/tmp/cortiq-models}
mkdir -p "$M"
start=$SECONDS
synth_bin=./cortiq-base
[ -x "$synth_bin" ] || synth_bin=./cortiq
for s in "$@"; do
  [ -f "$M/${s%%:*}-${s##*:}.gguf" ] && continue
  "$synth_bin" synth "${s%%:*}" --codec "${s##*:}" -o "$M/${s%%:*}-${s##*:}.gguf" >/dev/null 2>&1 &
done
