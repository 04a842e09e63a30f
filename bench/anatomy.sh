#!/usr/bin/env bash
# On the GPU machine: where a decode token's time goes. For each shape, the GPU time per
# token (`CMF_GRAPH_HOSTPROF=1`: on CUDA the captured token from submission to readback, on
# wgpu the token's compute pass) of the whole token, then with the profiling knobs: each stage
# left out (`CMF_GRAPH_SKIP`, crates/cortiq-engine/src/gpu/stage_skip.rs), all of them, and on
# CUDA every row kernel without its activation staging, its weight stream, or both, and the
# split attention without its merge step (`CMF_CUDA_DEFINES`, gpu/cuda/anatomy.rs); the whole
# token again last, as a check on drift.
# Writes OUTDIR/anatomy.md: each variant's time and what leaving it out saved, per token and
# per layer. The variants' outputs are wrong; only their timings mean anything.
# Usage: bash bench/anatomy.sh OUTDIR [SHAPE:CODEC ...]
# Env: BACKEND (cuda or wgpu; cuda), CORTIQ_BIN (binary, built with --features cortiq-cli/cuda
# for CUDA), PROMPT (512), GEN (128), MODELS_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/script-start.sh
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0)
prompt=${PROMPT:-512}
gen=${GEN:-128}
backend=${BACKEND:-cuda}
variants=("" "CMF_GRAPH_SKIP=qkv" "CMF_GRAPH_SKIP=attn" "CMF_GRAPH_SKIP=o" "CMF_GRAPH_SKIP=glu" "CMF_GRAPH_SKIP=down" "CMF_GRAPH_SKIP=qkv,attn,o,glu,down")
[ "$backend" = cuda ] && variants+=("CMF_CUDA_DEFINES=CORTIQ_NO_STAGING" "CMF_CUDA_DEFINES=CORTIQ_NO_STREAM" "CMF_CUDA_DEFINES=CORTIQ_NO_STAGING,CORTIQ_NO_STREAM" "CMF_CUDA_DEFINES=CORTIQ_ATT_NO_MERGE")
variants+=("")
: > "$out/anatomy.tsv"
for spec in "${specs[@]}"; do
  shape=${spec%%:*}; codec=${spec##*:}
  file="$models/$shape-$codec.gguf"
  [ -f "$file" ] || "$bin" synth "$shape" --codec "$codec" -o "$file" 2>/dev/null || { echo "synth $spec failed" >&2; continue; }
  layers=$("$bin" inspect "$file" 2>/dev/null | sed -n 's/^geometry: *\([0-9][0-9]*\) layers.*/\1/p' | head -n1)
  for var in "${variants[@]}"; do
    line=$(env $var CMF_GPU=$backend CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 timeout 120 "$bin" bench -m "$file" -p "$prompt" -n "$gen" -r 1 --backend "$backend" --explain 2>&1 | grep -m1 "token graph, per")
    # wgpu: the compute pass's own GPU time where the adapter has timestamps; else the tail.
    us=$(echo "$line" | sed -n -e 's/.*compute pass on the GPU \([0-9.]*\) us.*/\1/p' -e 't' -e 's/.*GPU tail \([0-9.]*\) us.*/\1/p')
    printf '%s\t%s\t%s\t%s\n' "$spec" "${layers:-?}" "${var:-whole token}" "${us:-failed}" | tee -a "$out/anatomy.tsv"
  done
done
python3 - "$out/anatomy.tsv" "$prompt" "$gen" "$backend" > "$out/anatomy.md" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"GPU time per decode token (`CMF_GRAPH_HOSTPROF=1`, `bench -p {sys.argv[2]} -n {sys.argv[3]}`, {sys.argv[4]}; us);")
print("saved = the whole token's time (the first run) less the variant's, per token and per layer.\n")
print("| shape | variant | us per token | saved per token | saved per layer |")
print("| --- | --- | --- | --- | --- |")
base = {}
for spec, layers, var, us in rows:
    if us == "failed":
        print(f"| {spec} | {var} | failed | | |")
        continue
    t = float(us)
    if var == "whole token" and spec not in base:
        base[spec] = t
        print(f"| {spec} | {var} | {t:.1f} | | |")
        continue
    d = base.get(spec, t) - t
    per = f"{d / int(layers):.2f}" if layers.isdigit() and int(layers) > 0 else "?"
    print(f"| {spec} | {var} | {t:.1f} | {d:.1f} | {per} |")
EOF
cat "$out/anatomy.md"
