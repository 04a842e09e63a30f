#!/usr/bin/env bash
# Sourced by the bench scripts from the repository root (after their `cd`): the GPU machine's
# environment (gpu-env.sh), then what they share: the output directory from the first
# argument (shifted off the caller's arguments, created), the binary (`$CORTIQ_BIN`, default
# ./cortiq) and the models directory (`$MODELS_DIR`, default /tmp/cortiq-models, created).
. bench/gpu-env.sh
out=${1:?output directory}
shift
mkdir -p "$out"
bin=${CORTIQ_BIN:-./cortiq}
models=${MODELS_DIR:-/tmp/cortiq-models}
mkdir -p "$models"
