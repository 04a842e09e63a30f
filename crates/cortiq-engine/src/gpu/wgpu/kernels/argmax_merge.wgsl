// The token graph's greedy pick, pass 2 (one workgroup): best[0] = the best of the groups'
// candidates (argmax.wgsl), 0 when no logit is a number.

@group(0) @binding(0) var<storage, read> part: array<vec2<u32>>; // (groups)
@group(0) @binding(1) var<storage, read_write> best: array<u32>; // (1)
@group(0) @binding(2) var<uniform> ap: ArgmaxParams;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var v = 0.0;
    var i = NONE;
    for (var g = lid; g < ap.groups; g += WG) {
        let c = part[g];
        if (beats(bitcast<f32>(c.x), c.y, v, i)) {
            v = bitcast<f32>(c.x);
            i = c.y;
        }
    }
    let b = workgroup_best(v, i, lid);
    if (lid == 0u) {
        best[0] = select(b.y, 0u, b.y == NONE);
    }
}
