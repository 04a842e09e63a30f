// Split attention, part 2: one workgroup per head merges the chunks' partials.
// `Step`, the per-token block, comes from step.wgsl (prepended by the host).

@group(0) @binding(0) var<storage, read> part: array<f32>;      // (n_head, chunks, head_dim + 2)
@group(0) @binding(1) var<storage, read_write> att: array<f32>; // (n_head * head_dim)
@group(0) @binding(2) var<uniform> st: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let hd = st.head_dim;
    let stride = hd + 2u;
    let base = h * st.chunks * stride;
    var m = -3.0e38;
    for (var c = 0u; c < st.chunks; c++) {
        m = max(m, part[base + c * stride + hd]);
    }
    var total = 0.0;
    for (var c = 0u; c < st.chunks; c++) {
        total += exp(part[base + c * stride + hd] - m) * part[base + c * stride + hd + 1u];
    }
    for (var d = lid; d < hd; d += 64u) {
        var a = 0.0;
        for (var c = 0u; c < st.chunks; c++) {
            a += exp(part[base + c * stride + hd] - m) * part[base + c * stride + d];
        }
        att[h * hd + d] = a / total;
    }
}
