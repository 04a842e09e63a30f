#!/usr/bin/env bash
# On the GPU machine: the wgpu matvec kernel table under several workgroup shapes, one
# process per shape (`CMF_WGPU_MATVEC` forces a shape on every matrix), merged into one table
# of chained microseconds per matrix (a dispatch waiting for the one before, as in the token
# graph) so each matrix class can take the shape that is best for it alone. Keep the host
# otherwise idle while it runs (the table warms the clock, host load lets it drop).
# Usage: bash bench/wgpu-shapes.sh OUTDIR [SHAPE ...]   (env: CORTIQ_BIN, BANDWIDTH=3800)
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/script-start.sh
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(default 32x4 32x8 64x4 64x8 128x4 128x8 256x8)
for s in "${shapes[@]}"; do
  if [ "$s" = default ]; then
    $bin gpu --kernels --bandwidth "${BANDWIDTH:-3800}" > "$out/kernels-$s.md" 2>"$out/kernels-$s.log"
  else
    CMF_WGPU_MATVEC=$s $bin gpu --kernels --bandwidth "${BANDWIDTH:-3800}" > "$out/kernels-$s.md" 2>"$out/kernels-$s.log"
  fi
done
python3 - "$out" "${shapes[@]}" > "$out/shapes.md" <<'PY'
import sys
out, shapes = sys.argv[1], sys.argv[2:]
rows, order = {}, []
for s in shapes:
    for line in open(f"{out}/kernels-{s}.md"):
        f = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(f) != 10 or not f[4].isdigit():
            continue
        key = (f[0], f[1], f[2])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key][s] = float(f[8])
print("Chained us per dispatch by workgroup shape (lower is better; `default` is the class's own shape).\n")
print("| matrix | codec | rows x cols | " + " | ".join(shapes) + " | best |")
print("| --- | --- | --- | " + " | ".join("---" for _ in shapes) + " | --- |")
for key in order:
    r = rows[key]
    best = min(r, key=r.get)
    print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(f"{r[s]:.2f}" if s in r else "-" for s in shapes) + f" | {best} |")
PY
cat "$out/shapes.md"
