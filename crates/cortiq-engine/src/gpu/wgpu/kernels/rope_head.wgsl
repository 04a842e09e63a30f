// RoPE of one head's vectors inside an attention kernel (prepended by the host after
// step.wgsl): the kernel puts the head's dimensions in `rope_in` and reads them back rotated.

// Dimensions 4 i .. 4 i + 3 of the head in `rope_in` after RoPE at position `pos`, by
// rope_store.wgsl's arithmetic (dimensions past the rotary width as they are).
fn rotated(i: u32, pos: u32) -> vec4<f32> {
    var r = rope_in[i];
    let half = st.rot / 2u;
    for (var e = 0u; e < 4u; e++) {
        let j = 4u * i + e;
        if (j < st.rot) {
            var pair = j / 2u;
            var first = j % 2u == 0u;
            var other = select(j - 1u, j + 1u, first);
            if (st.neox != 0u) {
                pair = j % half;
                first = j < half;
                other = select(j - half, j + half, first);
            }
            let theta = f32(pos) * pow(st.base, -2.0 * f32(pair) / f32(st.rot));
            let c = cos(theta);
            let s = sin(theta);
            let x = rope_in[j / 4u][j % 4u];
            let y = rope_in[other / 4u][other % 4u];
            r[e] = select(y * s + x * c, x * c - y * s, first);
        }
    }
    return r;
}

var<workgroup> rope_in: array<vec4<f32>, 64>; // a head's dimensions before RoPE
