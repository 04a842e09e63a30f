// Per-codec dot of one planar unit with x (planar.rs has the layouts; its tests decode them
// the same way in Rust). n: global unit index, r: row in the chunk, xs: the unit's x values
// (UNIT_VEC4 vec4s), xsum: their sum.

fn lo_nib(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn hi_nib(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

fn i8x4(w: u32) -> vec4<f32> {
    let s = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w));
    return vec4<f32>(s >> vec4<u32>(24u));
}

fn half_at(region: u32, i: u32) -> f32 {
    return unpack2x16float(ws[region + i / 2u])[i & 1u];
}

// levels . x over a 32-value nibble unit: word k holds values 4k..4k+3 (low nibbles) and
// 16+4k..16+4k+3 (high nibbles).
fn nib_dot(q: vec4<u32>, xs: ptr<function, array<vec4<f32>, 8>>) -> f32 {
    return dot(lo_nib(q.x), (*xs)[0]) + dot(lo_nib(q.y), (*xs)[1]) + dot(lo_nib(q.z), (*xs)[2]) + dot(lo_nib(q.w), (*xs)[3])
         + dot(hi_nib(q.x), (*xs)[4]) + dot(hi_nib(q.y), (*xs)[5]) + dot(hi_nib(q.z), (*xs)[6]) + dot(hi_nib(q.w), (*xs)[7]);
}

fn unit_dot_q4_0(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    return half_at(p.a, n) * (nib_dot(wq[n], xs) - 8.0 * xsum);
}

fn unit_dot_q4_1(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    let dm = unpack2x16float(ws[p.a + n]);
    return dm.x * nib_dot(wq[n], xs) + dm.y * xsum;
}

// int8 payload word group `q` against x vec4s o..o+3.
fn i8_dot(q: vec4<u32>, xs: ptr<function, array<vec4<f32>, 8>>, o: u32) -> f32 {
    return dot(i8x4(q.x), (*xs)[o]) + dot(i8x4(q.y), (*xs)[o + 1u]) + dot(i8x4(q.z), (*xs)[o + 2u]) + dot(i8x4(q.w), (*xs)[o + 3u]);
}

fn unit_dot_q8_0(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    return half_at(p.a, n) * (i8_dot(wq[2u * n], xs, 0u) + i8_dot(wq[2u * n + 1u], xs, 4u));
}

fn unit_dot_q8_row(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    return bitcast<f32>(ws[p.a + r]) * i8_dot(wq[n], xs, 0u);
}

fn unit_dot_f16(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    let q = wq[n];
    let a = vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
    let b = vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w));
    return dot(a, (*xs)[0]) + dot(b, (*xs)[1]);
}

fn unit_dot_f32(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    return dot(bitcast<vec4<f32>>(wq[n]), (*xs)[0]);
}

fn unit_dot_q4_k(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    let dm = unpack2x16float(ws[p.a + n / 8u]);
    let sm = ws[p.b + n / 2u] >> (16u * (n & 1u));
    return dm.x * f32(sm & 255u) * nib_dot(wq[n], xs) - dm.y * f32((sm >> 8u) & 255u) * xsum;
}

// The 2-bit highs of values 4k..4k+3 sit at bits 8k..8k+7 of their half's word.
fn hi2(h: u32, k: u32) -> vec4<f32> {
    let b = h >> (8u * k);
    return vec4<f32>(vec4<u32>(b, b >> 2u, b >> 4u, b >> 6u) & vec4<u32>(3u)) * 16.0;
}

fn unit_dot_q6_k(n: u32, r: u32, xs: ptr<function, array<vec4<f32>, 8>>, xsum: f32) -> f32 {
    let q = wq[n];
    let h0 = ws[p.c + 2u * n];
    let h1 = ws[p.c + 2u * n + 1u];
    let lo = dot(lo_nib(q.x) + hi2(h0, 0u) - 32.0, (*xs)[0]) + dot(lo_nib(q.y) + hi2(h0, 1u) - 32.0, (*xs)[1])
           + dot(lo_nib(q.z) + hi2(h0, 2u) - 32.0, (*xs)[2]) + dot(lo_nib(q.w) + hi2(h0, 3u) - 32.0, (*xs)[3]);
    let hi = dot(hi_nib(q.x) + hi2(h1, 0u) - 32.0, (*xs)[4]) + dot(hi_nib(q.y) + hi2(h1, 1u) - 32.0, (*xs)[5])
           + dot(hi_nib(q.z) + hi2(h1, 2u) - 32.0, (*xs)[6]) + dot(hi_nib(q.w) + hi2(h1, 3u) - 32.0, (*xs)[7]);
    let sw = ws[p.b + n / 2u] >> (16u * (n & 1u));
    let sa = f32(bitcast<i32>(sw << 24u) >> 24u);
    let sb = f32(bitcast<i32>(sw << 16u) >> 24u);
    return bitcast<f32>(ws[p.a + n / 8u]) * (sa * lo + sb * hi);
}
