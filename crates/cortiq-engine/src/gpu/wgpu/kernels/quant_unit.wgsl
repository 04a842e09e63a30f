// The int8 quantizer's rule for one 32-value unit (cpu/quant.rs): d = max|v| / 127 at f16
// precision, q = round-half-even(v * 127 / max), d * sum(q) at f16 precision; a value that
// is not finite makes d NaN. Appended by the host to the kernels that declare `xq` (units of
// two vec4<u32> words, four int8 values a word) and `xd` (units of d, d * sum, sum, and 0 or
// the unit's sum of squares of a normed row's x).
// A normed row's unit (`XMode::Int8Norm`: x times the norm's weights, the norm's scale
// 1 / rms(x) applied by the consumer) keeps d and d * sum in f32: the CPU rounds them to f16
// at the normed scale, and x's own scale can put them where f16 has no room (the residual
// stream's outliers overflow d * sum, its small early values make d subnormal), while the
// values q do not depend on the scale.

// Four int8 values (in i32 lanes) packed into one word, value 0 in the low byte.
fn pack4(q: vec4<i32>) -> u32 {
    let b = bitcast<vec4<u32>>(q) & vec4<u32>(255u);
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

fn finite4(v: vec4<f32>) -> bool {
    return all(abs(v) <= vec4<f32>(3.402823466e38));
}

// Unit `out` of xq / xd from its values v0 .. v7 (four each, in order).
fn store_unit(out: u32, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>, v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>) {
    store_unit_as(out, 0.0, true, v0, v1, v2, v3, v4, v5, v6, v7);
}

// The same with `w` in xd's fourth lane (a normed row's unit: the sum of squares of x there)
// and d, d * sum at f16 precision (`f16_scales`) or, for a normed row's unit, in f32.
fn store_unit_as(out: u32, w: f32, f16_scales: bool, v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>, v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>) {
    let m4 = max(max(max(abs(v0), abs(v1)), max(abs(v2), abs(v3))), max(max(abs(v4), abs(v5)), max(abs(v6), abs(v7))));
    let amax = max(max(m4.x, m4.y), max(m4.z, m4.w));
    let fin = finite4(v0) && finite4(v1) && finite4(v2) && finite4(v3) && finite4(v4) && finite4(v5) && finite4(v6) && finite4(v7);
    let d = amax / 127.0;
    let id = select(0.0, 127.0 / amax, amax != 0.0);
    let q0 = vec4<i32>(round(v0 * id));
    let q1 = vec4<i32>(round(v1 * id));
    let q2 = vec4<i32>(round(v2 * id));
    let q3 = vec4<i32>(round(v3 * id));
    let q4 = vec4<i32>(round(v4 * id));
    let q5 = vec4<i32>(round(v5 * id));
    let q6 = vec4<i32>(round(v6 * id));
    let q7 = vec4<i32>(round(v7 * id));
    let one = vec4<i32>(1);
    let sum = dot(q0 + q1 + q2 + q3, one) + dot(q4 + q5 + q6 + q7, one);
    xq[2u * out] = vec4<u32>(pack4(q0), pack4(q1), pack4(q2), pack4(q3));
    xq[2u * out + 1u] = vec4<u32>(pack4(q4), pack4(q5), pack4(q6), pack4(q7));
    let ds = f32(sum) * d;
    let scales = select(vec2<f32>(d, ds), vec2<f32>(quantizeToF16(d), quantizeToF16(ds)), f16_scales);
    xd[out] = vec4<f32>(select(bitcast<f32>(0x7fc00000u), scales.x, fin), scales.y, f32(sum), w);
}
