// Split attention, part 2, for an int8-activation output projection: one workgroup per head
// merges the chunks' partials as attn_combine.wgsl does and quantizes the head's output
// straight into the projection's int8 input (units of 32 values, head_dim % 32 == 0), by
// the quantizer's rule, so no f32 output and no quantize dispatch come between.
// `Step` comes from step.wgsl, `merge_stats` / `merged` from attn_merge.wgsl (prepended by
// the host), `store_unit` from quant_unit.wgsl (appended).

@group(0) @binding(0) var<storage, read> part: array<f32>;           // (n_head, chunks, head_dim + 2)
@group(0) @binding(1) var<storage, read_write> xq: array<vec4<u32>>; // (n_head * head_dim / 32, 2) the int8 values, 4 a word
@group(0) @binding(2) var<storage, read_write> xd: array<vec4<f32>>; // (n_head * head_dim / 32) d, d * sum, sum, 0
@group(0) @binding(3) var<uniform> st: Step;

var<workgroup> o: array<f32, 256>; // the head's output (head_dim)

// Output values 4 i .. 4 i + 3.
fn o4(i: u32) -> vec4<f32> {
    return vec4<f32>(o[4u * i], o[4u * i + 1u], o[4u * i + 2u], o[4u * i + 3u]);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let stats = merge_stats(wg.x);
    for (var d = lid; d < st.head_dim; d += 64u) {
        o[d] = merged(wg.x, d, stats);
    }
    workgroupBarrier();
    let units = st.head_dim / 32u;
    if (lid < units) {
        let b = 8u * lid;
        store_unit(wg.x * units + lid, o4(b), o4(b + 1u), o4(b + 2u), o4(b + 3u), o4(b + 4u), o4(b + 5u), o4(b + 6u), o4(b + 7u));
    }
}
