#!/usr/bin/env bash
# Session 33, call 4: row kernels' warps numbered across blocks (warp w of block b walks
# groups w * blocks + b, ...), so that where a grid's warps take unequal numbers of groups
# (llama-8b q8_0 qkv: 3072 row pairs over 2112 warps, the first 120 blocks taking two a warp)
# every block holds its share of the two-group warps (`CMF_CUDA_DEFINES=CORTIQ_X_WARP_INTERLEAVE`,
# the landed build + `warp-interleave.diff`). Parity with it, the A/B, a timeline of llama-8b q8_0.
set -u
cd "$(dirname "$0")/.."
. bench/device-start.sh llama-8b:q8_0 llama-8b:q4_0 llama-1b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
CMF_CUDA_DEFINES=CORTIQ_X_WARP_INTERLEAVE timeout 150 ./gpu_parity --test-threads 1 --nocapture token_graph_matches_the_cpu_path > $OUT/parity.log 2>&1; echo "rc $?" >> $OUT/parity.log
echo "parity: $(grep -E '^test result|^rc' $OUT/parity.log | tr '\n' ' ')"; grep -E "panicked|FAILED|^cuda .*graph vs CPU logits, worst" $OUT/parity.log | head
wait
echo "synth done at $((SECONDS-start)) s"
BINS="./cortiq" VARIANTS="CMF_NONE=1 CMF_CUDA_DEFINES=CORTIQ_X_WARP_INTERLEAVE" BACKEND=cuda PROMPT=512 GEN=128 REPS=1 ROUNDS=2 \
  DEADLINE=$((290-(SECONDS-start))) MODELS_DIR=$M bash bench/ab.sh $OUT/ab llama-8b:q8_0 llama-8b:q4_0 llama-1b:q8_0 > /dev/null 2>&1
cat $OUT/ab/ab.md
echo "ab done at $((SECONDS-start)) s"
DEFINES=CORTIQ_X_WARP_INTERLEAVE CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 40 bash bench/timeline.sh $OUT/timeline llama-8b:q8_0 | grep -E "^#|^\| (qkv|stage) "
rm -f $OUT/timeline/*.gz $OUT/timeline/*.bin
(cd $OUT && tar czf timeline.tgz timeline && rm -rf timeline)
echo "end at $((SECONDS-start)) s"
