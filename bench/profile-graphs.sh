#!/usr/bin/env bash
# On the GPU machine: where a decode token's time goes, per kind of kernel, for both token
# graphs. Writes into OUTDIR:
#   wgpu-<shape>.txt  the wgpu graph's host/GPU split and GPU time per kind of dispatch
#                     (CMF_GRAPH_HOSTPROF=2, GPU timestamps around each dispatch)
#   cuda-<shape>.txt  the CUDA graph's decode speed, then Nsight Compute's duration of every
#                     kernel of `bench -p NCU_PROMPT -n 4` (8 graph tokens and 2 prompts with
#                     the warm-up run) summed by kernel name (ncu --clock-control none;
#                     kernels run serialized)
# Usage: bash bench/profile-graphs.sh OUTDIR   (env: CORTIQ_BIN, SHAPES="smollm2-135m llama-1b",
#        CODEC=q4_0, BACKENDS="wgpu cuda", NCU_PROMPT=1: 256 profiles one prefill-graph chunk)
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/script-start.sh
codec=${CODEC:-q4_0}
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for shape in ${SHAPES:-smollm2-135m llama-1b}; do
  f="$models/$shape-$codec.gguf"
  [ -f "$f" ] || $bin synth "$shape" --codec "$codec" -o "$f" 2>/dev/null
  for backend in ${BACKENDS:-wgpu cuda}; do
    o="$out/$backend-$shape.txt"
    echo "# $shape $codec, $backend graph" > "$o"
    CMF_GPU=$backend CMF_GRAPH_HOSTPROF=2 CMF_PROBE_CACHE=0 $bin bench -m "$f" -p 512 -n 128 -r 1 --backend "$backend" --explain 2>&1 | grep -E "tg128 |pp512 |token graph|GPU time" >> "$o"
    if [ "$backend" = cuda ] && [ -n "$ncu" ]; then
      np=${NCU_PROMPT:-1}
      echo "# ncu: bench -p $np -n 4 (8 graph tokens and 2 prompts of $np with the warm-up run; divide decode totals by 8 per token)" >> "$o"
      CMF_GPU=cuda CMF_PROBE_CACHE=0 "$ncu" --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum \
        $bin bench -m "$f" -p "$np" -n 4 -r 1 --backend cuda 2> "$out/ncu-$shape.err" > "$out/ncu-$shape.csv"
      # CSV rows: ..., "Kernel Name", ..., "Metric Name", "Metric Unit", "Metric Value"
      python3 - "$out/ncu-$shape.csv" >> "$o" <<'EOF'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
k, metric, unit, val = (cols.index(c) for c in ("Kernel Name", "Metric Name", "Metric Unit", "Metric Value"))
grid = cols.index("Grid Size") if "Grid Size" in cols else None
scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
tot, cnt, byt, grids = collections.Counter(), collections.Counter(), collections.Counter(), {}
for r in rows[head + 1:]:
    v = float(r[val].replace(",", "")) * scale.get(r[unit], 1.0)
    if r[metric].startswith("gpu__time"):
        tot[r[k]] += v; cnt[r[k]] += 1
        if grid is not None: grids.setdefault(r[k], set()).add(r[grid])
    else:
        byt[r[k]] += v
print("# kernel, launches, total us, mean us, DRAM read GB/s, grids")
for name, t in tot.most_common():
    print(f"{name:16} {cnt[name]:6} {t:10.1f} {t / cnt[name]:8.2f} {byt[name] / t / 1e3:8.0f}  {sorted(grids.get(name, []))[:4]}")
print(f"{'all':16} {sum(cnt.values()):6} {sum(tot.values()):10.1f}")
EOF
    fi
  done
done
cat "$out"/*.txt
