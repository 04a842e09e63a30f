// Per-codec dot of one planar unit with x (planar.rs has the layouts; its tests decode them
// the same way in Rust). n: global unit index, r: row in the chunk, xs: the unit's x values
// (its first UNIT_VEC4 vec4s; a value, so it lives in registers), xsum: their sum.

struct X8 {
    v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>,
    v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>,
}

// The low nibbles of w's four bytes (values 4k..4k+3 of a unit's word k).
fn lo_nib(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u));
}

fn hi_nib(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(w >> 4u, w >> 12u, w >> 20u, w >> 28u) & vec4<u32>(15u));
}

// The four int8 of w.
fn i8x4(w: u32) -> vec4<f32> {
    let s = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u), bitcast<i32>(w));
    return vec4<f32>(s >> vec4<u32>(24u));
}

// Q6_K levels minus 32 of four values: 4-bit lows from `lo` (shifted into place), 2-bit
// highs from `h` (bits 8k..8k+7 of the half's word hold values 4k..4k+3).
fn q6(lo: u32, shift: u32, h: u32, k: u32) -> vec4<f32> {
    let l = vec4<u32>(lo >> shift, lo >> (shift + 8u), lo >> (shift + 16u), lo >> (shift + 24u)) & vec4<u32>(15u);
    let b = h >> (8u * k);
    let hh = (vec4<u32>(b, b >> 2u, b >> 4u, b >> 6u) & vec4<u32>(3u)) << vec4<u32>(4u);
    return vec4<f32>(l | hh) - 32.0;
}

fn half_at(region: u32, i: u32) -> f32 {
    return unpack2x16float(ws[region + i / 2u])[i & 1u];
}

// levels . x over a 32-value nibble unit: word k holds values 4k..4k+3 (low nibbles) and
// 16+4k..16+4k+3 (high nibbles).
fn nib_dot(q: vec4<u32>, xs: X8) -> f32 {
    return dot(lo_nib(q.x), xs.v0) + dot(lo_nib(q.y), xs.v1) + dot(lo_nib(q.z), xs.v2) + dot(lo_nib(q.w), xs.v3)
         + dot(hi_nib(q.x), xs.v4) + dot(hi_nib(q.y), xs.v5) + dot(hi_nib(q.z), xs.v6) + dot(hi_nib(q.w), xs.v7);
}

fn unit_dot_q4_0(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    return half_at(p.a, n) * (nib_dot(wq[n], xs) - 8.0 * xsum);
}

fn unit_dot_q4_1(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    let dm = unpack2x16float(ws[p.a + n]);
    return dm.x * nib_dot(wq[n], xs) + dm.y * xsum;
}

// int8 payload word group `q` against four x vec4s.
fn i8_dot(q: vec4<u32>, a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>) -> f32 {
    return dot(i8x4(q.x), a) + dot(i8x4(q.y), b) + dot(i8x4(q.z), c) + dot(i8x4(q.w), d);
}

fn unit_dot_q8_0(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    return half_at(p.a, n) * (i8_dot(wq[2u * n], xs.v0, xs.v1, xs.v2, xs.v3) + i8_dot(wq[2u * n + 1u], xs.v4, xs.v5, xs.v6, xs.v7));
}

fn unit_dot_q8_row(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    return bitcast<f32>(ws[p.a + r]) * i8_dot(wq[n], xs.v0, xs.v1, xs.v2, xs.v3);
}

fn unit_dot_f16(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    let q = wq[n];
    let a = vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
    let b = vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w));
    return dot(a, xs.v0) + dot(b, xs.v1);
}

fn unit_dot_f32(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    return dot(bitcast<vec4<f32>>(wq[n]), xs.v0);
}

fn unit_dot_q4_k(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    let dm = unpack2x16float(ws[p.a + n / 8u]);
    let sm = ws[p.b + n / 2u] >> (16u * (n & 1u));
    return dm.x * f32(sm & 255u) * nib_dot(wq[n], xs) - dm.y * f32((sm >> 8u) & 255u) * xsum;
}

// The fifth bits of a 5-bit unit's values 4k..4k+3 (bits 4k.. of its high word: Q5_1,
// Q5_K), as 0 / 1.
fn bits4(h: u32, k: u32) -> vec4<f32> {
    let b = h >> (4u * k);
    return vec4<f32>(vec4<u32>(b, b >> 1u, b >> 2u, b >> 3u) & vec4<u32>(1u));
}

// The fifth bits . x over a 32-value unit.
fn high_dot(h: u32, xs: X8) -> f32 {
    return dot(bits4(h, 0u), xs.v0) + dot(bits4(h, 1u), xs.v1) + dot(bits4(h, 2u), xs.v2) + dot(bits4(h, 3u), xs.v3)
         + dot(bits4(h, 4u), xs.v4) + dot(bits4(h, 5u), xs.v5) + dot(bits4(h, 6u), xs.v6) + dot(bits4(h, 7u), xs.v7);
}

fn unit_dot_q5_1(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    let dm = unpack2x16float(ws[p.a + n]);
    return dm.x * (nib_dot(wq[n], xs) + 16.0 * high_dot(ws[p.c + n], xs)) + dm.y * xsum;
}

fn unit_dot_q5_k(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    let dm = unpack2x16float(ws[p.a + n / 8u]);
    let sm = ws[p.b + n / 2u] >> (16u * (n & 1u));
    return dm.x * f32(sm & 255u) * (nib_dot(wq[n], xs) + 16.0 * high_dot(ws[p.c + n], xs)) - dm.y * f32((sm >> 8u) & 255u) * xsum;
}

fn unit_dot_q6_k(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {
    let q = wq[n];
    let h0 = ws[p.c + 2u * n];
    let h1 = ws[p.c + 2u * n + 1u];
    let lo = dot(q6(q.x, 0u, h0, 0u), xs.v0) + dot(q6(q.y, 0u, h0, 1u), xs.v1)
           + dot(q6(q.z, 0u, h0, 2u), xs.v2) + dot(q6(q.w, 0u, h0, 3u), xs.v3);
    let hi = dot(q6(q.x, 4u, h1, 0u), xs.v4) + dot(q6(q.y, 4u, h1, 1u), xs.v5)
           + dot(q6(q.z, 4u, h1, 2u), xs.v6) + dot(q6(q.w, 4u, h1, 3u), xs.v7);
    let sw = ws[p.b + n / 2u] >> (16u * (n & 1u));
    let sa = f32(bitcast<i32>(sw << 24u) >> 24u);
    let sb = f32(bitcast<i32>(sw << 16u) >> 24u);
    return bitcast<f32>(ws[p.a + n / 8u]) * (sa * lo + sb * hi);
}
