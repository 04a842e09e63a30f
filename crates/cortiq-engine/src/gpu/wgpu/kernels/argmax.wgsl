// The token graph's greedy pick, pass 1: workgroup g the best candidate (argmax_pick.wgsl)
// of logits g * WG * PER .. (g + 1) * WG * PER into part[g]; every invocation's PER loads
// are issued before it compares (one workgroup walking the whole vocabulary waited out one
// load round trip per 256 logits). argmax_merge.wgsl then picks among the groups.

@group(0) @binding(0) var<storage, read> logits: array<f32>;          // (n)
@group(0) @binding(1) var<storage, read_write> part: array<vec2<u32>>; // (groups) value bits, index (NONE: none)
@group(0) @binding(2) var<uniform> ap: ArgmaxParams;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var vals: array<f32, PER>;
    for (var j = 0u; j < PER; j++) {
        vals[j] = logits[min((wg.x * PER + j) * WG + lid, ap.n - 1u)];
    }
    // This invocation's indices ascend with j, so a strict > keeps the first.
    var v = 0.0;
    var i = NONE;
    for (var j = 0u; j < PER; j++) {
        let k = (wg.x * PER + j) * WG + lid;
        if (k < ap.n && !is_nan(vals[j]) && (i == NONE || vals[j] > v)) {
            v = vals[j];
            i = k;
        }
    }
    let b = workgroup_best(v, i, lid);
    if (lid == 0u) {
        part[wg.x] = b;
    }
}
