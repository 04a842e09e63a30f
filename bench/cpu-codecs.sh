#!/usr/bin/env bash
# CPU speed per weight codec on this machine: llama-1b synthesized (random weights, so
# speed only) in each codec, `cortiq bench --backend cpu` pp$PROMPT / tg$GEN, $REPS runs.
# Writes OUTDIR/cpu-codecs.{md,json} and prints the markdown.
# Usage: bash bench/cpu-codecs.sh OUTDIR [CODEC ...]   (default: q4_0 q4_k q5_k q6_k iq4_nl iq4_xs q3_k q2_k)
# Env: CORTIQ_BIN (default: ./target/release/cortiq, built here), MODELS_DIR, THREADS,
# PROMPT (64), GEN (32), REPS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?output directory}
shift
codecs=("$@")
[ ${#codecs[@]} -gt 0 ] || codecs=(q4_0 q4_k q5_k q6_k iq4_nl iq4_xs q3_k q2_k)
bin=${CORTIQ_BIN:-}
[ -n "$bin" ] || { cargo build --release --locked -q; bin=./target/release/cortiq; }
models=${MODELS_DIR:-/tmp/cortiq-models}
threads=${THREADS:-$(nproc)}
mkdir -p "$out" "$models"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
rows=""
echo '{"runs": [' > "$out/cpu-codecs.json"
first=1
for codec in "${codecs[@]}"; do
  file="$models/llama-1b-$codec.gguf"
  [ -f "$file" ] || $bin synth llama-1b --codec "$codec" -o "$file" > /dev/null 2>&1
  json=$($bin -t "$threads" bench -m "$file" -p "${PROMPT:-64}" -n "${GEN:-32}" -r "${REPS:-2}" --backend cpu --json 2> /dev/null)
  [ $first -eq 1 ] || echo ',' >> "$out/cpu-codecs.json"
  first=0
  printf '{"codec": "%s", "result": %s}\n' "$codec" "$json" >> "$out/cpu-codecs.json"
  rows+=$(echo "$json" | python3 -c "
import json, sys
d = json.load(sys.stdin); r = d['results']
print(f\"| $codec | {d['size_bytes'] / d['params'] * 8:.2f} | \" + ' | '.join(f\"{x['tokens_per_s']:.2f} ± {x['stddev']:.2f}\" for x in r) + ' |')
")$'\n'
done
echo ']}' >> "$out/cpu-codecs.json"
{
  echo "Machine: $cpu, $threads threads ($(hostname -s)), $(date -u +%Y-%m-%d); llama-1b, random weights"
  echo
  echo "| codec | file bits/weight | pp${PROMPT:-64} tok/s | tg${GEN:-32} tok/s |"
  echo "| --- | --- | --- | --- |"
  printf '%s' "$rows"
} > "$out/cpu-codecs.md"
cat "$out/cpu-codecs.md"
