// The matrix-unit GEMM's per-codec decode (gemm_coop.wgsl): four of a unit's levels
// (gemm_words' bytes, codecs_q8.wgsl) as the weights' values, by the unit's formula above.

fn coop_weights_q4_0(levels: vec4<i32>, w: vec2<f32>) -> vec4<f32> {
    return w.x * vec4<f32>(levels - vec4<i32>(8));
}

fn coop_weights_q4_1(levels: vec4<i32>, w: vec2<f32>) -> vec4<f32> {
    return fma(vec4<f32>(levels), vec4<f32>(w.x), vec4<f32>(w.y));
}

fn coop_weights_q8_0(levels: vec4<i32>, w: vec2<f32>) -> vec4<f32> {
    return w.x * vec4<f32>(levels);
}
