// The token graph's first dispatch where the token comes from the device: y (cols) = row t of
// a planar weight chunk decoded by the codec's slice decoder (`slice_vals`, slices.wgsl), t
// the first word of x2 (written by the host, or copied there from the previous token's
// argmax; clamped to the rows), times the family's embedding scale (`p.eps` here: Gemma's
// sqrt(n_embd), else 1). One invocation per 4 values; cols = 4 x_stride.
// Bindings and `Params`: weights_io.wgsl (prepended by the host).

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.x_stride) {
        return;
    }
    let t = min(bitcast<u32>(x2[0].x), p.rows - 1u);
    let v = slice_vals(t, i / 8u, i % 8u) * p.eps;
    y[4u * i] = v.x;
    y[4u * i + 1u] = v.y;
    y[4u * i + 2u] = v.z;
    y[4u * i + 3u] = v.w;
}
