// Split attention's merge of one head's chunk partials (prepended by the host to the combine
// kernels, after step.wgsl; the kernel declares `part` (n_head, chunks, head_dim + 2) and
// `st`). A head's partials start at float `base` = h * chunks * (head_dim + 2).

// (largest max score, sum of the chunks' sums of exps rescaled to it) over the head's chunks.
fn merge_stats(base: u32) -> vec2<f32> {
    let hd = st.head_dim;
    let stride = hd + 2u;
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

// Output dimension d of the head: the chunks' V sums rescaled to `stats` and divided by its
// sum of exps.
fn merged(base: u32, d: u32, stats: vec2<f32>) -> f32 {
    let hd = st.head_dim;
    let stride = hd + 2u;
    var a = 0.0;
    for (var c = 0u; c < st.chunks; c++) {
        a += exp(part[base + c * stride + hd] - stats.x) * part[base + c * stride + d];
    }
    return a / stats.y;
}
