// The token graph's greedy pick (one workgroup): best[0] = the argmax of the logits by
// sample::argmax's rule -- the largest value, the first index on ties, NaN never chosen, 0
// when no logit is a number. NaN is recognized by its bits (WGSL may assume no NaN in
// comparisons).

struct ArgmaxParams {
    n: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;  // (n)
@group(0) @binding(1) var<storage, read_write> best: array<u32>; // (1)
@group(0) @binding(2) var<uniform> ap: ArgmaxParams;

const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;
var<workgroup> best_value: array<f32, 256>;
var<workgroup> best_index: array<u32, 256>;

fn is_nan(v: f32) -> bool {
    let b = bitcast<u32>(v);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0u;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    // Each invocation walks its indices in ascending order, so a strict > keeps the first.
    var v = 0.0;
    var i = NONE;
    for (var k = lid; k < ap.n; k += WG) {
        let x = logits[k];
        if (!is_nan(x) && (i == NONE || x > v)) {
            v = x;
            i = k;
        }
    }
    best_value[lid] = v;
    best_index[lid] = i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            let w = best_value[lid + s];
            let j = best_index[lid + s];
            let mine = best_index[lid];
            if (j != NONE && (mine == NONE || w > best_value[lid] || (w == best_value[lid] && j < mine))) {
                best_value[lid] = w;
                best_index[lid] = j;
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        best[0] = select(best_index[0], 0u, best_index[0] == NONE);
    }
}
