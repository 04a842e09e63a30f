// part (groups, k): workgroup g's k largest keys among logits g * WG * PER .. (topk_keys.wgsl),
// descending, (0, 0) past its finite values.

@group(0) @binding(0) var<storage, read> logits: array<f32>;         // (n)
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>; // (groups, k) part
@group(0) @binding(2) var<uniform> tp: TopKParams;

// Every logit of the slice is in registers: nothing spills.
fn spilled(i: u32) -> vec2<u32> {
    return vec2<u32>(0u, 0u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    var keys: array<vec2<u32>, PER>;
    for (var j = 0u; j < PER; j++) {
        let i = (wg.x * PER + j) * WG + lid;
        keys[j] = select(vec2<u32>(0u, 0u), order_key(logits[min(i, tp.n - 1u)], i), i < tp.n);
    }
    top_rounds(keys, 0u, 0u, wg.x * tp.k, lid REDUCE_PASS);
}
