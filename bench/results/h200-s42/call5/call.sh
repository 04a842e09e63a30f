#!/usr/bin/env bash
# Session 42, call 5: README's tables on main's build (4b42b9e: decode attention by KV-head
# groups at long contexts): the issue's table (tg128 after -p 512), then decode against
# depth (tg128 after prompts of 1024 .. 4096 tokens) on llama-1b and llama-8b q4_0.
set -u
cd "$(dirname "$0")/../../../.."
. bench/device-start.sh smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0
CMF_GPU=cuda ./cortiq gpu > $OUT/gpu.txt 2>&1; grep -q "could not come up" $OUT/gpu.txt && { cat $OUT/gpu.txt; exit 1; }
wait
echo "synth done at $((SECONDS-start)) s"
CORTIQ_BIN=./cortiq BACKENDS=cuda BANDWIDTH=4350 REPS=2 MODELS_DIR=$M timeout $((250-(SECONDS-start))) bash bench/gpu-all.sh $OUT/table > /dev/null 2>&1
cat $OUT/table/bench.md
echo "table done at $((SECONDS-start)) s"
for m in llama-1b-q4_0 llama-8b-q4_0; do
  for p in 1024 2048 4096; do
    [ $((SECONDS-start)) -lt 285 ] || break 2
    r=$(CMF_GPU=cuda CMF_PROBE_CACHE=0 timeout 30 ./cortiq bench -m $M/$m.gguf -p $p -n 128 -r 1 --backend cuda --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print(' '.join(f\"{x['test']} {x['tokens_per_s']:.1f}\" for x in d['results']))")
    echo "$m p$p: $r" | tee -a $OUT/depth.txt
  done
done
(cd $OUT && tar czf table.tgz table && rm -rf table)
echo "end at $((SECONDS-start)) s"
