#!/usr/bin/env bash
# Session 39, call 3: where call 2's clustered GQA attention (CMF_X_ATT_GQA=1) loses: the
# block timelines of llama-1b q4_0 with the split + merge kernels and with it.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh llama-1b:q4_0
wait
for v in base gqa; do
  if [ $v = gqa ]; then export CMF_X_ATT_GQA=1; fi
  CORTIQ_BIN=./cortiq MODELS_DIR=$M GEN=8 timeout 90 bash bench/timeline.sh $OUT/tl-$v llama-1b:q4_0 > $OUT/tl-$v.txt 2>&1
  grep -E "^token span|^\| (stage|qkv|attention|merge|o|gate_up|down|head) " $OUT/tl-$v.txt | head -30
  rm -f $OUT/tl-$v/*.gz $OUT/tl-$v/*.bin
done
echo "end at $((SECONDS-start)) s"
