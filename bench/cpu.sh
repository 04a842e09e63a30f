#!/usr/bin/env bash
# CPU numbers on this machine for the default model (SmolLM2-135M-Instruct Q4_1):
# llama-bench-style pp512 / tg128 (3 runs, one invocation) and perplexity on
# shared/reference/gpl-3.txt. Writes bench/results/cpu-<host>.{md,json} and prints the markdown.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q
bin=./target/release/cortiq
model=$($bin pull | tail -n 1)
host=$(hostname -s)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
threads=${THREADS:-$(nproc)}
out=bench/results/cpu-$host
ppl=$($bin -t "$threads" perplexity -m "$model" -f ../shared/reference/gpl-3.txt 2>/dev/null | tail -n 1)
$bin -t "$threads" bench -m "$model" -p 512 -n 128 -r 3 --json > "$out.json"
{
  echo "Machine: $cpu, $threads threads ($host), $(date -u +%Y-%m-%d)"
  echo
  echo "| model | test | tok/s (mean ± sd of 3) |"
  echo "| --- | --- | --- |"
  python3 -c "
import json
d = json.load(open('$out.json'))
for r in d['results']:
    print(f\"| {d['model']} | {r['test']} | {r['tokens_per_s']:.1f} ± {r['stddev']:.1f} |\")
"
  echo
  echo "perplexity (gpl-3.txt, 512-token chunks): $ppl"
} > "$out.md"
cat "$out.md"
