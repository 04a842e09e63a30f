#!/usr/bin/env bash
# Session 43, call 5 (review): the grouped kernels' shared chunk prologue (`group_chunk` in
# graph.cu, address arithmetic moved out of attention_group / attention_group64) against the
# exact softmax, per head and grouped from 0 positions.
set -u
cd "$(dirname "$0")/../../../.."
for gz in gpuab/*.gz; do gunzip -c "$gz" > "./$(basename "$gz" .gz)" && chmod +x "./$(basename "$gz" .gz)"; done
. bench/gpu-env.sh
export CORTIQ_REQUIRE_GPU=cuda
timeout 130 ./gpu_parity --test-threads 1 --nocapture cuda_attention_matches_an_exact_softmax > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
grep -E "^test result|^rc|panicked" $OUT/parity.log
grep -E "cuda grouped attention .*, 1 rows" $OUT/parity.log | awk '{print $NF}' | sort -g | tail -1
grep -c "grouped attention" $OUT/parity.log
gzip $OUT/parity.log
