// Per-codec decode of 4 values of a row (the GEMM's weight tile loads): values
// 4 part .. 4 part + 3 of the row's 32-value slice s (planar.rs has the layouts).

fn nib4(w: u32, hi: bool) -> vec4<f32> {
    return select(lo_nib(w), hi_nib(w), hi);
}

fn slice_vals_q4_0(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    return half_at(p.a, n) * (nib4(wq[n][part & 3u], part >= 4u) - 8.0);
}

fn slice_vals_q4_1(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    let dm = unpack2x16float(ws[p.a + n]);
    return dm.x * nib4(wq[n][part & 3u], part >= 4u) + dm.y;
}

fn slice_vals_q8_0(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    return half_at(p.a, n) * i8x4(wq[2u * n + part / 4u][part & 3u]);
}

fn slice_vals_q8_row(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + 2u * s + part / 4u;
    return bitcast<f32>(ws[p.a + r]) * i8x4(wq[n][part & 3u]);
}

fn slice_vals_f16(r: u32, s: u32, part: u32) -> vec4<f32> {
    let q = wq[r * p.units + 4u * s + part / 2u];
    let i = 2u * (part & 1u);
    return vec4<f32>(unpack2x16float(q[i]), unpack2x16float(q[i + 1u]));
}

fn slice_vals_f32(r: u32, s: u32, part: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(wq[r * p.units + 8u * s + part]);
}

fn slice_vals_q4_k(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    let dm = unpack2x16float(ws[p.a + n / 8u]);
    let sm = ws[p.b + n / 2u] >> (16u * (n & 1u));
    return dm.x * f32(sm & 255u) * nib4(wq[n][part & 3u], part >= 4u) - dm.y * f32((sm >> 8u) & 255u);
}

fn slice_vals_q5_1(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    let dm = unpack2x16float(ws[p.a + n]);
    return dm.x * (nib4(wq[n][part & 3u], part >= 4u) + 16.0 * bits4(ws[p.c + n], part)) + dm.y;
}

fn slice_vals_q5_k(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    let dm = unpack2x16float(ws[p.a + n / 8u]);
    let sm = ws[p.b + n / 2u] >> (16u * (n & 1u));
    let v = nib4(wq[n][part & 3u], part >= 4u) + 16.0 * bits4(ws[p.c + n], part);
    return dm.x * f32(sm & 255u) * v - dm.y * f32((sm >> 8u) & 255u);
}

fn slice_vals_q6_k(r: u32, s: u32, part: u32) -> vec4<f32> {
    let n = r * p.units + s;
    let k = part & 3u;
    let hi = part >= 4u;
    let h = ws[p.c + 2u * n + select(0u, 1u, hi)];
    let v = q6(wq[n][k], select(0u, 4u, hi), h, k);
    let sw = ws[p.b + n / 2u] >> (16u * (n & 1u));
    let sc = select(f32(bitcast<i32>(sw << 24u) >> 24u), f32(bitcast<i32>(sw << 16u) >> 24u), hi);
    return bitcast<f32>(ws[p.a + n / 8u]) * sc * v;
}
