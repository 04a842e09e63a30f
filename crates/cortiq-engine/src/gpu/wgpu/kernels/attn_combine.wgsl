// Split attention, part 2: one workgroup per head merges the chunks' partials.
// `Step`, the per-token block, comes from step.wgsl, `merge_stats` / `merged` from
// attn_merge.wgsl (both prepended by the host).

@group(0) @binding(0) var<storage, read> part: array<f32>;      // (n_head, chunks, head_dim + 2)
@group(0) @binding(1) var<storage, read_write> att: array<f32>; // (n_head * head_dim)
@group(0) @binding(2) var<uniform> st: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let stats = merge_stats(wg.x);
    for (var d = lid; d < st.head_dim; d += 64u) {
        att[wg.x * st.head_dim + d] = merged(wg.x, d, stats);
    }
}
