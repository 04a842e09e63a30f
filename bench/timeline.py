#!/usr/bin/env python3
"""Per-stage times of the CUDA decode token from a block timeline (`CMF_CUDA_DEFINES=CORTIQ_TRACE`,
`gpu/cuda/trace.rs`): usage `timeline.py TRACE.bin [TOKENS]` (the last TOKENS decode tokens, default 4).

Each launch of a token is found from its blocks (kernel family, entry, wait released, exit; blocks
of a launch all enter before the next launch's first block, since a kernel's dependents start only
after all its blocks have started). For every stage of a layer it prints, in us, averaged over
layers and tokens:
  boundary  the previous launch's last block exit -> this launch's first wait release
  work      this launch's first wait release -> its last block exit
  marginal  the previous launch's last exit -> this launch's last exit (boundary + work)
  early     this launch's first block entry -> its first wait release (blocks in before the wait)
  block     the median block's time from its wait release to its exit
and the token's span (embedding's first entry -> the head's last exit); then each stage's block
times (wait release -> exit) in percentiles, and their median by how many blocks of the same
launch shared the block's SM; then, per stage, the blocks that entered (and so could prefetch
their first weights) while the kernel before still ran and those that entered after it ended,
cold, with their median block times; and, for launches of an even number of blocks, how often
block b and block b + blocks / 2 shared an SM."""
import struct
import sys
from collections import Counter, defaultdict
from statistics import mean, median

FAMILY = {1: "embed", 2: "qkv", 3: "attention", 4: "merge", 5: "matvec", 6: "matvec_img", 7: "gate_up", 9: "ffn"}
# A layer's launches in order; the fused FFN (family 9) stands for gate_up and down.
LAUNCHES = ["qkv", "attention", "merge", "o", "gate_up", "down"]
LAYER = LAUNCHES + ["ffn"]


def records(path):
    data = open(path, "rb").read()
    for i in range(0, len(data) - len(data) % 32, 32):
        key, enter, wait, leave = struct.unpack_from("<4Q", data, i)
        yield key >> 48, (key >> 32) & 0xFFFF, key & 0xFFFFFFFF, enter, wait, leave


def launches(recs):
    """Blocks in entry order, split where the family changes."""
    out = []
    for r in sorted(recs, key=lambda r: r[3]):
        if not out or out[-1]["family"] != r[0]:
            out.append({"family": r[0], "blocks": []})
        out[-1]["blocks"].append(r)
    for l in out:
        b = l["blocks"]
        waits = [x[4] for x in b if x[4]]
        l["enter"] = min(x[3] for x in b)
        l["wait"] = min(waits) if waits else None
        l["exit"] = max(x[5] for x in b)
        l["block"] = median([x[5] - x[4] for x in b if x[4]]) if waits else None
    return out


def tokens(ls):
    """Launch lists from one embedding to the next, labelled by stage; decode tokens only
    (one embedding block row), whole (the head's matvec last)."""
    toks, cur = [], None
    for l in ls:
        if FAMILY.get(l["family"]) == "embed":
            cur = [l]
            toks.append(cur)
        elif cur is not None:
            cur.append(l)
    # A prefill chunk's embedding has a block row per prompt row: decode's has the fewest.
    fewest = min((len(t[0]["blocks"]) for t in toks), default=0)
    out = []
    for t in toks:
        if len(t[0]["blocks"]) != fewest:
            continue
        if t[-1]["family"] != 5:
            continue
        labels, k = ["embed"], 0
        for l in t[1:-1]:
            if l["family"] == 2:
                k = 0
            labels.append("ffn" if FAMILY.get(l["family"]) == "ffn" else (LAUNCHES[k] if k < len(LAUNCHES) else "?"))
            k += 1
        labels.append("head")
        if "?" in labels or labels.count("qkv") == 0:
            continue
        out.append(list(zip(labels, t)))
    return out


def main():
    path, want = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4
    recs = list(records(path))
    stamps = sorted({r[3] for r in recs} | {r[5] for r in recs})
    steps = [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
    toks = tokens(launches(recs))
    if not toks:
        sys.exit("no whole decode token in the trace")
    # Decode tokens share one launch count: the last `want` of them.
    n = len(toks[-1])
    toks = [t for t in toks if len(t) == n][-want:]
    stats = defaultdict(lambda: defaultdict(list))
    for t in toks:
        prev_exit = None
        for label, l in t:
            s = stats[label]
            if prev_exit is not None and l["wait"] is not None:
                s["boundary"].append(l["wait"] - prev_exit)
                s["work"].append(l["exit"] - l["wait"])
                s["marginal"].append(l["exit"] - prev_exit)
                s["early"].append(l["wait"] - l["enter"])
                s["block"].append(l["block"])
                s["blocks"].append(len(l["blocks"]))
            prev, prev_exit = prev_exit, l["exit"]
            share = Counter(x[1] for x in l["blocks"])
            sm_of = {x[2]: x[1] for x in l["blocks"]}
            half = len(l["blocks"]) // 2
            if len(l["blocks"]) % 2 == 0:
                s["pairs"].append(sum(1 for b in range(half) if b in sm_of and sm_of.get(b + half) == sm_of[b]) / half)
            for x in l["blocks"]:
                if x[4]:
                    s["times"].append(x[5] - x[4])
                    s[f"share{share[x[1]]}"].append(x[5] - x[4])
                    if prev is not None and x[3] < prev:
                        s["in_early"].append(x[5] - x[4])
                    elif prev is not None:
                        s["in_late"].append(x[5] - x[4])
                        s["late_entry"].append(x[3] - prev)
    span = [t[-1][1]["exit"] - t[0][1]["enter"] for t in toks]
    layers = sum(1 for label, _ in toks[-1] if label == "qkv")
    print(f"trace {path}: {len(recs)} block records, {len(toks)} decode tokens of {n} launches ({layers} layers); timer step >= {min(steps) if steps else 0} ns")
    print(f"token span {mean(span) / 1e3:.1f} us (embedding's first entry -> head's last exit)\n")
    print("| stage | launches | blocks | boundary us | work us | marginal us | early us | median block us | marginal x count, us a token |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label in ["embed"] + LAYER + ["head"]:
        s = stats.get(label)
        if not s or not s["marginal"]:
            continue
        per_token = len(s["marginal"]) / len(toks)
        print(f"| {label} | {per_token:.0f} | {mean(s['blocks']):.0f} | {mean(s['boundary']) / 1e3:.2f} | {mean(s['work']) / 1e3:.2f} | {mean(s['marginal']) / 1e3:.2f} | {mean(s['early']) / 1e3:.2f} | {mean(s['block']) / 1e3:.2f} | {sum(s['marginal']) / len(toks) / 1e3:.1f} |")

    print("\n| stage | block p10 us | p50 | p90 | max | median on SMs holding 1 / 2 / 3 / 4 of its blocks (blocks a launch) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label in LAYER + ["head"]:
        s = stats.get(label)
        if not s or not s["times"]:
            continue
        t = sorted(s["times"])
        q = lambda f: t[min(len(t) - 1, int(f * len(t)))] / 1e3
        by = " / ".join(f"{median(s[f'share{k}']) / 1e3:.2f} ({len(s[f'share{k}']) / len(toks) / max(1, len(s['marginal']) / len(toks)):.0f})" if s[f"share{k}"] else "-" for k in (1, 2, 3, 4))
        print(f"| {label} | {q(0.1):.2f} | {q(0.5):.2f} | {q(0.9):.2f} | {t[-1] / 1e3:.2f} | {by} |")

    print("\n| stage | blocks in before the kernel before ended (a launch) | their median block us | blocks in after it | their median block us | their entry after its end, median / max us |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label in LAYER + ["head"]:
        s = stats.get(label)
        if not s or not s["marginal"]:
            continue
        n = len(s["marginal"])
        med = lambda k: f"{median(s[k]) / 1e3:.2f}" if s[k] else "-"
        late = f"{median(s['late_entry']) / 1e3:.2f} / {max(s['late_entry']) / 1e3:.2f}" if s["late_entry"] else "-"
        print(f"| {label} | {len(s['in_early']) / n:.0f} | {med('in_early')} | {len(s['in_late']) / n:.0f} | {med('in_late')} | {late} |")

    print("\n| stage | of an even grid's blocks b < g / 2, the share whose SM also holds block b + g / 2 |")
    print("| --- | --- |")
    for label in LAYER + ["head"]:
        s = stats.get(label)
        if s and s["pairs"]:
            print(f"| {label} | {mean(s['pairs']):.2f} |")


if __name__ == "__main__":
    main()
