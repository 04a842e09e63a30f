#!/usr/bin/env bash
# CPU numbers on this machine for the default model (SmolLM2-135M-Instruct Q4_1) and
# Gemma-3-270M (Q4_K_M, whose tensors mix Q5_0, Q4_K, Q6_K and Q8_0): llama-bench-style
# pp512 / tg128 (3 runs, one invocation each) and perplexity on shared/reference/gpl-3.txt.
# Writes bench/results/cpu-<host>.{md,json} and prints the markdown. Env: MODELS (names
# `cortiq pull` knows), THREADS.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q
bin=./target/release/cortiq
host=$(hostname -s)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
threads=${THREADS:-$(nproc)}
out=bench/results/cpu-$host
rows=""
ppls=""
echo '{"models": [' > "$out.json"
first=1
for name in ${MODELS:-smollm2-135m-instruct gemma3-270m}; do
  model=$($bin pull "$name" | tail -n 1)
  ppl=$($bin -t "$threads" perplexity -m "$model" -f ../shared/reference/gpl-3.txt 2>/dev/null | tail -n 1)
  json=$($bin -t "$threads" bench -m "$model" -p 512 -n 128 -r 3 --json)
  [ $first -eq 1 ] || echo ',' >> "$out.json"
  first=0
  echo "$json" >> "$out.json"
  rows+=$(echo "$json" | python3 -c "
import json, sys
d = json.load(sys.stdin)
for r in d['results']:
    print(f\"| {d['model']} | {r['test']} | {r['tokens_per_s']:.1f} ± {r['stddev']:.1f} |\")
")$'\n'
  ppls+="perplexity of $(basename "$model") (gpl-3.txt, 512-token chunks): $ppl"$'\n'
done
echo ']}' >> "$out.json"
{
  echo "Machine: $cpu, $threads threads ($host), $(date -u +%Y-%m-%d)"
  echo
  echo "| model | test | tok/s (mean ± sd of 3) |"
  echo "| --- | --- | --- |"
  printf '%s' "$rows"
  echo
  printf '%s' "$ppls"
} > "$out.md"
cat "$out.md"
