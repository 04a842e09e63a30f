#!/usr/bin/env bash
# On the GPU machine: synthesize the benchmark shapes, run `cortiq bench` on every backend
# this build has, write bench.md and bench.json into the directory given as $1.
# Usage: bash bench/gpu-all.sh OUTDIR [SHAPE:CODEC ...]
# Env: CORTIQ_BIN (binary), BACKENDS (default: all compiled), BANDWIDTH (GB/s, for the floor
# fraction; 4350 on the H200), PROMPT, GEN, REPS, BENCH_TIMEOUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/script-start.sh
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(smollm2-135m:q4_0 smollm2-135m:q8_0 llama-1b:q4_0 llama-1b:q8_0 llama-8b:q4_0 llama-8b:q8_0)
backends=${BACKENDS:-$($bin gpu | sed -n "s/^compiled backends: //p" | tr -d ",")}
gen=${GEN:-128}
prompt=${PROMPT:-512}
reps=${REPS:-3}
{
  echo "Machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || echo 'no GPU'), host CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) threads, $(date -u +%Y-%m-%d)"
  echo
  echo "| shape | codec | backend | pp$prompt tok/s | tg$gen tok/s | weight bytes/token | floor fraction | upload delta |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} > "$out/bench.md"
echo '{"runs": [' > "$out/bench.json"
first=1
for spec in "${specs[@]}"; do
  shape=${spec%%:*}; codec=${spec##*:}
  file="$models/$shape-$codec.gguf"
  [ -f "$file" ] || $bin synth "$shape" --codec "$codec" -o "$file" 2>/dev/null || { echo "synth $spec failed" >&2; continue; }
  for be in $backends; do
    case $be in cpu) sel=0 ;; *) sel=$be ;; esac
    json=$(CMF_GPU=$sel CMF_PROBE_CACHE=0 timeout "${BENCH_TIMEOUT:-400}" $bin bench -m "$file" -p "$prompt" -n "$gen" -r "$reps" --backend "$be" --json ${BANDWIDTH:+--bandwidth $BANDWIDTH} 2>"$out/$shape-$codec-$be.log") || { echo "bench $spec $be failed" >&2; continue; }
    [ $first -eq 1 ] || echo ',' >> "$out/bench.json"
    first=0
    printf '{"shape": "%s", "codec": "%s", "result": %s}\n' "$shape" "$codec" "$json" >> "$out/bench.json"
    echo "$json" | python3 -c "
import json, sys
d = json.load(sys.stdin); r = {x['test']: x for x in d['results']}
pp = r['pp$prompt']; tg = r['tg$gen']
ff = tg.get('floor_fraction')
ffs = f'{ff:.3f}' if ff is not None else '-'
print(f\"| $shape | $codec | {tg['backend']} | {pp['tokens_per_s']:.1f} ± {pp['stddev']:.1f} | {tg['tokens_per_s']:.2f} ± {tg['stddev']:.2f} | {tg['weight_bytes_per_token']} | {ffs} | {tg['upload_bytes_delta']} |\")
" >> "$out/bench.md"
  done
done
echo ']}' >> "$out/bench.json"
cat "$out/bench.md"
