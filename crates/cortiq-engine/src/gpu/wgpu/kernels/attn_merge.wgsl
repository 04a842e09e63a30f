// Split attention's merge of one head's chunk partials (prepended by the host to the combine
// kernels, after step.wgsl; the kernel declares `part` (n_head, chunks, head_dim + 2) and
// `st`).

// (largest max score, sum of the chunks' sums of exps rescaled to it) over head h's chunks.
fn merge_stats(h: u32) -> vec2<f32> {
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
    return vec2<f32>(m, total);
}

// Output dimension d of head h: the chunks' V sums rescaled to `stats` (`merge_stats(h)`)
// and divided by its sum of exps.
fn merged(h: u32, d: u32, stats: vec2<f32>) -> f32 {
    let hd = st.head_dim;
    let stride = hd + 2u;
    let base = h * st.chunks * stride;
    var a = 0.0;
    for (var c = 0u; c < st.chunks; c++) {
        a += exp(part[base + c * stride + hd] - stats.x) * part[base + c * stride + d];
    }
    return a / stats.y;
}
