// The greedy pick's rule (sample::argmax): the largest value, the first index on ties, NaN
// never chosen. A candidate is (value, index), index NONE for none. Prepended by the host to
// argmax.wgsl and argmax_merge.wgsl; NaN is recognized by its bits (WGSL may assume no NaN
// in comparisons).

struct ArgmaxParams {
    n: u32,      // logits
    groups: u32, // argmax.wgsl workgroups: ceil(n / (WG * PER))
    pad0: u32,
    pad1: u32,
}

const WG: u32 = 256u;
const PER: u32 = 16u; // logits per invocation in argmax.wgsl
const NONE: u32 = 0xffffffffu;
var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_index: array<u32, 256>;

fn is_nan(v: f32) -> bool {
    let b = bitcast<u32>(v);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u;
}

// Whether candidate (w, j) beats (v, i).
fn beats(w: f32, j: u32, v: f32, i: u32) -> bool {
    return j != NONE && (i == NONE || w > v || (w == v && j < i));
}

// The best of every invocation's candidate, to every invocation (call from uniform control
// flow).
fn workgroup_best(v: f32, i: u32, lid: u32) -> vec2<u32> {
    best_value[lid] = v;
    best_index[lid] = i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s && beats(best_value[lid + s], best_index[lid + s], best_value[lid], best_index[lid])) {
            best_value[lid] = best_value[lid + s];
            best_index[lid] = best_index[lid + s];
        }
        workgroupBarrier();
    }
    return vec2<u32>(bitcast<u32>(best_value[0]), best_index[0]);
}
