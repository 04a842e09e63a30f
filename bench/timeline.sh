#!/usr/bin/env bash
# On the GPU machine (CUDA): where the captured decode token's time goes, kernel by kernel. For
# each shape one bench run with the kernels compiled to record every block's entry, wait
# release and exit (`CMF_CUDA_DEFINES=CORTIQ_TRACE`, crates/cortiq-engine/src/gpu/cuda/trace.rs;
# outputs stay right, each traced kernel gains a barrier), tokens timed alone
# (`CMF_GRAPH_HOSTPROF=1`); bench/timeline.py turns the last GEN / 2 decode tokens into
# per-stage times. Writes OUTDIR/timeline-SHAPE-CODEC.md, the bench output beside it and the
# records gzipped.
# Usage: bash bench/timeline.sh OUTDIR [SHAPE:CODEC ...]
# Env: CORTIQ_BIN (built with --features cortiq-cli/cuda), PROMPT (512), GEN (16), MODELS_DIR,
# DEFINES (more CMF_CUDA_DEFINES switches to compile beside CORTIQ_TRACE, comma-separated; with
# CORTIQ_TRACE_LOADED, _STAGED or _DOTTED a row kernel's wait release reads as the return of its
# normed row's loads, the end of its staging or of its dot products, so its block time and
# boundary move by that phase).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/script-start.sh
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(smollm2-135m:q4_0 llama-1b:q4_0 llama-8b:q4_0 llama-8b:q8_0)
prompt=${PROMPT:-512}
gen=${GEN:-16}
for spec in "${specs[@]}"; do
  shape=${spec%%:*}; codec=${spec##*:}
  name="$shape-$codec"
  file="$models/$name.gguf"
  [ -f "$file" ] || "$bin" synth "$shape" --codec "$codec" -o "$file" 2>/dev/null || { echo "synth $spec failed" >&2; continue; }
  rm -f "$out/trace-$name.bin" "$out/trace-$name.bin.gz"
  CMF_GPU=cuda CMF_CUDA_DEFINES=CORTIQ_TRACE${DEFINES:+,$DEFINES} CMF_GRAPH_HOSTPROF=1 CMF_PROBE_CACHE=0 CMF_CUDA_TRACE="$out/trace-$name.bin" \
    timeout 120 "$bin" bench -m "$file" -p "$prompt" -n "$gen" -r 1 --backend cuda > "$out/bench-$name.txt" 2>&1 \
    || { echo "bench $spec failed: $(tail -n1 "$out/bench-$name.txt")" >&2; continue; }
  python3 bench/timeline.py "$out/trace-$name.bin" $((gen / 2)) > "$out/timeline-$name.md" && echo "## $spec" && cat "$out/timeline-$name.md"
  gzip -f "$out/trace-$name.bin"
done
