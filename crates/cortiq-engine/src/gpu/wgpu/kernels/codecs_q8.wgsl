// Per-codec dot of one planar unit with int8 activations (the CPU path's rule, cpu/quant.rs:
// per 32 values d = max|x| / 127 and q = round(x / d)), by packed 4 x 8-bit integer dot
// products (one instruction per four products where the device has them). n: global unit
// index; xa, xb: the unit's 32 int8 values (values 4k..4k+3 in component k of xa, 16 + 4k..
// of xb); xd: (d, d * sum(q), sum(q), 0) of the unit, d and d * sum at f16 precision (in f32,
// the fourth lane x's squares, for a normed row's unit: quant_unit.wgsl).

// Nibble levels (0..15, so the same as signed bytes) . q over a 32-value unit: word k holds
// values 4k..4k+3 in its low nibbles and 16 + 4k.. in its high ones.
fn nib_dot8(q: vec4<u32>, xa: vec4<u32>, xb: vec4<u32>) -> i32 {
    let m = 0x0F0F0F0Fu;
    return dot4I8Packed(q.x & m, xa.x) + dot4I8Packed(q.y & m, xa.y) + dot4I8Packed(q.z & m, xa.z) + dot4I8Packed(q.w & m, xa.w)
         + dot4I8Packed((q.x >> 4u) & m, xb.x) + dot4I8Packed((q.y >> 4u) & m, xb.y) + dot4I8Packed((q.z >> 4u) & m, xb.z) + dot4I8Packed((q.w >> 4u) & m, xb.w);
}

// 16 int8 weights (one payload word group) . 16 int8 values.
fn i8_dot8(q: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot4I8Packed(q.x, x.x) + dot4I8Packed(q.y, x.y) + dot4I8Packed(q.z, x.z) + dot4I8Packed(q.w, x.w);
}

fn unit_dot8_q4_0(n: u32, xa: vec4<u32>, xb: vec4<u32>, xd: vec4<f32>) -> f32 {
    return half_at(p.a, n) * xd.x * f32(nib_dot8(wq[n], xa, xb) - 8 * i32(xd.z));
}

fn unit_dot8_q4_1(n: u32, xa: vec4<u32>, xb: vec4<u32>, xd: vec4<f32>) -> f32 {
    let dm = unpack2x16float(ws[p.a + n]);
    return dm.x * xd.x * f32(nib_dot8(wq[n], xa, xb)) + dm.y * xd.y;
}

fn unit_dot8_q8_0(n: u32, xa: vec4<u32>, xb: vec4<u32>, xd: vec4<f32>) -> f32 {
    return half_at(p.a, n) * xd.x * f32(i8_dot8(wq[2u * n], xa) + i8_dot8(wq[2u * n + 1u], xb));
}

// The int8 GEMM's per-codec pieces (gemm_q8.wgsl): half h of unit s of row r as four words
// of int8 values (values 16 h .. 16 h + 15; Q4 nibbles as bytes 0..15), the unit's weight
// scales (d, m; m only for Q4_1), and a (row, column) unit's integer dot made a float by
// the same formula as unit_dot8_*.

fn gemm_words_q4_0(r: u32, s: u32, h: u32) -> vec4<u32> {
    return (wq[r * p.units + s] >> vec4<u32>(4u * h)) & vec4<u32>(0x0F0F0F0Fu);
}

fn gemm_scale_q4_0(r: u32, s: u32) -> vec2<f32> {
    return vec2<f32>(half_at(p.a, r * p.units + s), 0.0);
}

fn gemm_combine_q4_0(dot: i32, w: vec2<f32>, xd: vec4<f32>) -> f32 {
    return w.x * xd.x * f32(dot - 8 * i32(xd.z));
}

fn gemm_words_q4_1(r: u32, s: u32, h: u32) -> vec4<u32> {
    return gemm_words_q4_0(r, s, h);
}

fn gemm_scale_q4_1(r: u32, s: u32) -> vec2<f32> {
    return unpack2x16float(ws[p.a + r * p.units + s]);
}

fn gemm_combine_q4_1(dot: i32, w: vec2<f32>, xd: vec4<f32>) -> f32 {
    return w.x * xd.x * f32(dot) + w.y * xd.y;
}

fn gemm_words_q8_0(r: u32, s: u32, h: u32) -> vec4<u32> {
    return wq[2u * (r * p.units + s) + h];
}

fn gemm_scale_q8_0(r: u32, s: u32) -> vec2<f32> {
    return gemm_scale_q4_0(r, s);
}

fn gemm_combine_q8_0(dot: i32, w: vec2<f32>, xd: vec4<f32>) -> f32 {
    return w.x * xd.x * f32(dot);
}
