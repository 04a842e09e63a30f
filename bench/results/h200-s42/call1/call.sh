#!/usr/bin/env bash
# Session 42, call 1: main's build (87dd7f4; code as bdfa192). (1) README's table at
# llama-bench's own tg128 definition: decode from an (almost) empty cache, PROMPT=1 (positions
# 1..128), beside the table's usual tg128 after a 512-token prompt. (2) Decode speed against
# depth (tg128 after prompts of 1 .. 8192 tokens) on llama-1b and llama-8b q4_0: what the
# attention over the f32 K / V mirror costs as the context grows.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
PROMPT=1 CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout 200 bash bench/gpu-all.sh $OUT/table-p1 > /dev/null 2>&1
cat $OUT/table-p1/bench.md
echo "table-p1 done at $((SECONDS-start)) s"
for m in llama-1b-q4_0 llama-8b-q4_0 llama-1b-q8_0; do
  for p in 1 512 2048 4096 8192; do
    r=$(CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 60 ./cortiq bench -m $M/$m.gguf -p $p -n 128 -r 2 --backend cuda --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print(' '.join(f\"{x['test']} {x['tokens_per_s']:.1f}\" for x in d['results']))")
    echo "$m p$p: $r" | tee -a $OUT/depth.txt
    [ $((SECONDS-start)) -lt 520 ] || break 2
  done
done
echo "end at $((SECONDS-start)) s"
