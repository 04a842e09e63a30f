#!/usr/bin/env bash
# On the GPU machine: A/B of cortiq binaries inside one call (processes differ by a few %,
# so variants are compared only here, alternating). For each shape, each round runs every
# binary once, in turn; prints one line per run and a table of the means into OUTDIR/ab.md,
# with each binary's tg geometric mean over the first one's; the best's name goes to
# OUTDIR/ab-best.txt.
# Usage: BINS="./cortiq-base ./cortiq-new" bash bench/ab.sh OUTDIR SHAPE:CODEC...
# Env: BACKEND (cuda), PROMPT (64), GEN (128), REPS (2), ROUNDS (2), DEADLINE (seconds from
# the start after which no new run begins; 0: none), MODELS_DIR, VARIANTS (settings that
# each binary runs under in turn, e.g. "CMF_WGPU_INT8=0 CMF_WGPU_INT8=1"; commas join several
# settings into one variant, "A=1,B=2", while a comma not followed by NAME= stays in the value,
# "CMF_CUDA_DEFINES=X,Y"; default: one run as the environment is), BENCH_ARGS
# (more `cortiq bench` flags for every run, e.g. "--sample").
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/script-start.sh
read -r -a bins <<< "${BINS:?binaries to compare}"
read -r -a variants <<< "${VARIANTS:-}"
[ ${#variants[@]} -gt 0 ] || variants=("")
backend=${BACKEND:-cuda}
prompt=${PROMPT:-64}
gen=${GEN:-128}
start=$SECONDS
: > "$out/ab-runs.txt"
# CUDA compiles a build's kernels on its first use (NVRTC, ~110 s a module on the GPU
# machine's host, once per build, kernel defines and machine): every binary under every
# variant compiles at once before the first run instead of one after another inside it.
if [ "$backend" = cuda ]; then
  for bin in "${bins[@]}"; do
    for var in "${variants[@]}"; do
      env $(echo "$var" | sed -E 's/,([A-Z_][A-Z0-9_]*=)/ \1/g') CMF_GPU=cuda timeout 300 "$bin" gpu > /dev/null 2>&1 &
    done
  done
  wait
  echo "kernels compiled at $((SECONDS - start)) s" >> "$out/ab.log"
fi
for spec in "$@"; do
  shape=${spec%%:*}; codec=${spec##*:}
  file="$models/$shape-$codec.gguf"
  [ -f "$file" ] || "${bins[0]}" synth "$shape" --codec "$codec" -o "$file" 2>/dev/null || { echo "synth $spec failed" >&2; continue; }
  for round in $(seq "${ROUNDS:-2}"); do
    for bin in "${bins[@]}"; do
      for var in "${variants[@]}"; do
        label="$bin${var:+[$var]}"
        if [ "${DEADLINE:-0}" -gt 0 ] && [ $((SECONDS - start)) -ge "$DEADLINE" ]; then
          echo "deadline: $spec round $round $label not run" >> "$out/ab-runs.txt"
          continue
        fi
        json=$(env $(echo "$var" | sed -E 's/,([A-Z_][A-Z0-9_]*=)/ \1/g') CMF_GPU=$backend CMF_PROBE_CACHE=0 timeout 300 "$bin" bench -m "$file" -p "$prompt" -n "$gen" -r "${REPS:-2}" --backend "$backend" --json ${BENCH_ARGS:-} 2>>"$out/ab.log") || { echo "$spec $label failed" >> "$out/ab-runs.txt"; continue; }
        echo "$json" | python3 -c "
import json, sys
r = {x['test'].split()[0]: x for x in json.load(sys.stdin)['results']}
print('$spec', '$label', $round, round(r['pp$prompt']['tokens_per_s'], 1), round(r['tg$gen']['tokens_per_s'], 2))" >> "$out/ab-runs.txt"
      done
    done
  done
done
python3 - "$out/ab-runs.txt" "$prompt" "$gen" "$out/ab-best.txt" > "$out/ab.md" <<'EOF'
import sys, collections, math
runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5:
        continue
    key = (f[0], f[1])
    if key not in runs:
        order.append(key)
    runs[key].append((float(f[3]), float(f[4])))
print(f"| shape:codec | binary | pp{sys.argv[2]} tok/s (mean of rounds) | tg{sys.argv[3]} tok/s (each round) |")
print("| --- | --- | --- | --- |")
for key in order:
    v = runs[key]
    pp = sum(x[0] for x in v) / len(v)
    print(f"| {key[0]} | {key[1]} | {pp:.1f} | {' / '.join(f'{x[1]:.1f}' for x in v)} |")
# Each label's tg tok/s (mean of rounds) over the first label's, geometric mean over the
# shapes both ran; the best label goes to ab-best.txt.
tg = {k: sum(x[1] for x in v) / len(v) for k, v in runs.items()}
labels = list(dict.fromkeys(k[1] for k in order))
shapes = list(dict.fromkeys(k[0] for k in order))
score = {}
for label in labels:
    logs = [math.log(tg[(s, label)] / tg[(s, labels[0])]) for s in shapes if (s, label) in tg and (s, labels[0]) in tg]
    if logs:
        score[label] = math.exp(sum(logs) / len(logs))
if score:
    print()
    print(f"tg geometric mean over {labels[0]}: " + ", ".join(f"{k} {v:.4f}" for k, v in score.items()))
    open(sys.argv[4], "w").write(max(score, key=score.get) + "\n")
EOF
cat "$out/ab-runs.txt" "$out/ab.md"
