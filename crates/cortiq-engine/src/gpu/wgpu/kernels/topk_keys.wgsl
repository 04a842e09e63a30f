// The sampler's candidates on the device: the k largest finite logits (k <= 64), larger first
// and the lower index first among equal values, as the host's `top_candidates` orders them.
// Two dispatches: every workgroup takes the k largest of its 4096 logits (topk_groups.wgsl),
// then one workgroup the k largest of those and, for a sampled token queued ahead, draws the
// next token from them (topk_merge.wgsl). A key is a vec2: x the value's bits in IEEE total
// order (-0 below +0), y the index's complement; (0, 0) for NaN and +-inf, which are never
// candidates (a finite value's x is at least 0x00800000), and no two keys of one dispatch's
// logits are equal but (0, 0). Both kernels bound the k-th largest key from below, gather the
// keys at or above the bound into workgroup memory and write each at its rank among them (how
// many gathered keys are larger), so neither takes the candidates one round at a time.
// Infinities and NaN are recognized by their bits (WGSL may assume no NaN in comparisons).

struct TopKParams {
    n: u32,      // logits
    k: u32,      // candidates wanted
    groups: u32, // topk_groups workgroups: ceil(n / (WG * PER))
    draw: u32,   // 1: topk_merge draws the next token from the candidates (DrawParams)
}

const WG: u32 = 256u;
const PER: u32 = 16u; // topk_groups' keys per invocation, held in registers
const K_MAX: u32 = 64u;
const GATHERED: u32 = 1024u; // K_MAX * PER: what topk_groups can gather, and topk_merge keeps

// Both kernels: the keys whose k-th largest bounds the answer's k-th key from below
// (topk_groups: each invocation's largest; topk_merge: the groups' leading keys), that bound,
// and the keys at or above it, gathered.
var<workgroup> candidates: array<vec2<u32>, WG>;
var<workgroup> bound: vec2<u32>;
var<workgroup> gathered: array<vec2<u32>, GATHERED>;
var<workgroup> count: atomic<u32>;

fn order_key(v: f32, i: u32) -> vec2<u32> {
    let u = bitcast<u32>(v);
    if ((u & 0x7f800000u) == 0x7f800000u) {
        return vec2<u32>(0u, 0u);
    }
    return vec2<u32>(select(u | 0x80000000u, ~u, (u & 0x80000000u) != 0u), 0xffffffffu - i);
}

fn above(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.x > b.x || (a.x == b.x && a.y > b.y);
}

fn larger(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(b, a, above(a, b));
}

// Whether a key is a candidate's (not the (0, 0) of a non-finite value or of no value).
fn is_key(a: vec2<u32>) -> bool {
    return a.x != 0u;
}

// bound = key where it is the k-th largest of candidates[..n] (keys are distinct, so one
// invocation at most writes it); after a barrier that published the candidates.
fn offer_bound(key: vec2<u32>, n: u32) {
    if (!is_key(key)) {
        return;
    }
    var rank = 0u;
    for (var j = 0u; j < n; j++) {
        rank += select(0u, 1u, above(candidates[j], key));
    }
    if (rank + 1u == tp.k) {
        bound = key;
    }
}

// How many of gathered[..len] are larger than `key`: its place among them.
fn gathered_rank(key: vec2<u32>, len: u32) -> u32 {
    var rank = 0u;
    for (var j = 0u; j < len; j++) {
        rank += select(0u, 1u, above(gathered[j], key));
    }
    return rank;
}
