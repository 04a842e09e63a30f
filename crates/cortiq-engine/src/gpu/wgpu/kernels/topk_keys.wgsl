// The sampler's candidates on the device: the k largest finite logits (k <= 64), larger first
// and the lower index first among equal values, as the host's `top_candidates` orders them.
// Two dispatches: every workgroup takes the k largest of its 4096 logits (topk_groups.wgsl),
// then one workgroup the k largest of those (topk_merge.wgsl). A key is a vec2: x the value's
// bits in IEEE total order (-0 below +0), y the index's complement; (0, 0) for NaN and
// +-inf, which are never candidates (a finite value's x is at least 0x00800000). Each round
// takes the largest key below the last one taken, so nothing needs marking. Infinities and
// NaN are recognized by their bits (WGSL may assume no NaN in comparisons). The host appends
// topk_reduce_subgroup.wgsl or topk_reduce_shared.wgsl (`workgroup_largest`) and fills in
// REDUCE_ARGS / REDUCE_PASS / REDUCE_PARAMS from its directives.

struct TopKParams {
    n: u32,      // logits
    k: u32,      // candidates wanted
    groups: u32, // topk_groups workgroups: ceil(n / (WG * PER))
    pad: u32,
}

const WG: u32 = 256u;
const PER: u32 = 16u; // keys per invocation held in registers

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

// Rounds r < tp.k: the largest key below the previous round's among every invocation's
// `keys` (and, past the registers' WG * PER, `part` from `spill` to `total`, read each
// round), into out[base + r] by invocation 0. Call from uniform control flow.
fn top_rounds(keys: array<vec2<u32>, PER>, spill: u32, total: u32, base: u32, lid: u32 REDUCE_PARAMS) {
    var last = vec2<u32>(0xffffffffu, 0xffffffffu);
    for (var r = 0u; r < tp.k; r++) {
        var m = vec2<u32>(0u, 0u);
        for (var j = 0u; j < PER; j++) {
            if (above(last, keys[j])) {
                m = larger(m, keys[j]);
            }
        }
        for (var i = spill + lid; i < total; i += WG) {
            let key = spilled(i);
            if (above(last, key)) {
                m = larger(m, key);
            }
        }
        last = workgroup_largest(m, lid REDUCE_PASS);
        if (lid == 0u) {
            out[base + r] = last;
        }
    }
}
