// Per-codec dot of one planar unit with int8 activations (the CPU path's rule, cpu/quant.rs:
// per 32 values d = max|x| / 127 and q = round(x / d)), by packed 4 x 8-bit integer dot
// products (one instruction per four products where the device has them). n: global unit
// index; xa, xb: the unit's 32 int8 values (values 4k..4k+3 in component k of xa, 16 + 4k..
// of xb); xd: (d, d * sum(q), sum(q), 0) of the unit, d and d * sum at f16 precision.

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
