#!/usr/bin/env bash
# Session 10 call 5: why the full gpu_parity run found no wgpu adapter for its last two tests (call 1): open files, threads and GPU memory of one process as wgpu and CUDA backends come and go (a throwaway test binary, not committed); the process's open-file limit.
set -u
cd "$(dirname "$0")/.."
gunzip -c gpuab/fdprobe.gz > ./fdprobe; chmod +x fdprobe
. bench/gpu-env.sh
echo "ulimit -n soft $(ulimit -Sn) hard $(ulimit -Hn)"
timeout 120 ./fdprobe --nocapture 2>&1 | grep -E "fds|result|panicked" | tee $OUT/fdprobe.txt
