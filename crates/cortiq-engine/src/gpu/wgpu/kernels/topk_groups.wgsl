// part (groups, k): workgroup g's k largest keys among logits g * WG * PER .. (topk_keys.wgsl),
// descending, (0, 0) past its finite values.

@group(0) @binding(0) var<storage, read> logits: array<f32>;          // (n)
@group(0) @binding(1) var<storage, read_write> part: array<vec2<u32>>; // (groups, k)
@group(0) @binding(2) var<uniform> tp: TopKParams;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var keys: array<vec2<u32>, PER>;
    for (var j = 0u; j < PER; j++) {
        let i = (wg.x * PER + j) * WG + lid;
        keys[j] = select(vec2<u32>(0u, 0u), order_key(logits[min(i, tp.n - 1u)], i), i < tp.n);
    }
    var last = vec2<u32>(0xffffffffu, 0xffffffffu);
    for (var r = 0u; r < tp.k; r++) {
        var m = vec2<u32>(0u, 0u);
        for (var j = 0u; j < PER; j++) {
            if (above(last, keys[j])) {
                m = larger(m, keys[j]);
            }
        }
        last = workgroup_largest(m, lid);
        if (lid == 0u) {
            part[wg.x * tp.k + r] = last;
        }
    }
}
