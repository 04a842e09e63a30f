#!/usr/bin/env python3
"""Where the cluster kernel's stages spend their time (`CMF_CUDA_CLUSTER=1` with
`CMF_CUDA_DEFINES=CORTIQ_TRACE`; records of family 8 from `kernels/cluster.cu`'s StageMarks):
usage `cluster_timeline.py TRACE.bin [TOKENS]` (the last TOKENS decode tokens, default 8).

Each block (rank) writes one record a stage: its job (layer * 5 + stage), its start, and the ns
from its start to each mark. Per stage it prints in us the median over blocks, layers and tokens
of each part, and its 90th percentile:
  issue   laying out and issuing the next stage's copies (thread 0)
  slot    waiting for this stage's weights / K / V rows
  inbox   waiting for the other blocks' vectors
  stage   the input row normed and staged as int8 (stage B: its partials cleared)
  dots    the dot products (stage B: the attention over the block's positions)
  send    the residual add / SiLU / RoPE and the stores into every block's inbox
  tail    the rest (stage E: waiting for the new residual and taking it)
then the median token's span over all blocks and its us a layer."""
import sys
from collections import defaultdict
from statistics import median

from timeline import records

STAGES = ["A qkv", "B attention", "C merge+o", "D gate/up", "E down"]
PARTS = ["issue", "slot", "inbox", "stage", "dots", "send", "tail"]


def stage_records(path):
    """(rank, job, start ns, the 7 marks) of each family-8 record; timeline.py reads the ring's
    32-byte records, whose (SM, block, entry, wait, exit) fields hold these here."""
    for family, rank, job, begin, d1, d2 in records(path):
        if family == 8:
            yield rank, job, begin, [(d1 >> (16 * k)) & 0xFFFF for k in range(4)] + [(d2 >> (16 * k)) & 0xFFFF for k in range(3)]


def tokens(recs):
    """Per rank, its records in time order cut where the job number falls (a new launch);
    then the n-th launch of every rank together."""
    by_rank = defaultdict(list)
    for r in sorted(recs, key=lambda r: r[2]):
        runs = by_rank[r[0]]
        if not runs or r[1] <= runs[-1][-1][1]:
            runs.append([])
        runs[-1].append(r)
    count = min(len(v) for v in by_rank.values()) if by_rank else 0
    return [[r for runs in by_rank.values() for r in runs[len(runs) - count + t]] for t in range(count)]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    path = sys.argv[1]
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    toks = tokens(list(stage_records(path)))
    if not toks:
        sys.exit(f"{path}: no cluster stage records (was it run with CMF_CUDA_CLUSTER=1 and CMF_CUDA_DEFINES=CORTIQ_TRACE?)")
    toks = toks[-want:]
    parts = defaultdict(lambda: defaultdict(list))
    for tok in toks:
        for rank, job, begin, marks in tok:
            p = parts[job % 5]
            for name, a, b in zip(PARTS, [0] + marks[:-1], marks):
                p[name].append(b - a)
            p["total"].append(marks[-1])
    print(f"# cluster stages, last {len(toks)} tokens, {len(toks[0])} records a token (us: median / p90)\n")
    print("| stage | " + " | ".join(PARTS) + " | total |")
    print("| --- " * (len(PARTS) + 2) + "|")
    for s in sorted(parts):
        p = parts[s]
        cells = " | ".join(f"{median(p[k]) / 1e3:.2f} / {pct(p[k], 0.9) / 1e3:.2f}" for k in PARTS + ["total"])
        print(f"| {STAGES[s]} | {cells} |")
    spans = [max(r[2] + r[3][-1] for r in tok) - min(r[2] for r in tok) for tok in toks]
    layers = (max(r[1] for r in toks[0]) + 1) // 5
    print(f"\ntoken span (first stage start -> last stage end over all blocks): {median(spans) / 1e3:.1f} us, {median(spans) / 1e3 / layers:.2f} us a layer over {layers} layers")


if __name__ == "__main__":
    main()
