// SPEC section 6's f16 operand guard, appended by the host to the kernels that round values
// to f16 for the matrix units (the prompt attention's q, the prompt GEMMs' int8 units): they
// declare `bad` (one word, read_write) and call `guard4` on each vec4 before its rounding;
// where a value is past the bound the word is set, and the host runs the chunk again on
// kernels without f16 operands. The bound is f16's largest finite value less 32 (about one
// part in 2048): an int8 unit's values are decoded as d * q with d = max / 127 rounded to f16
// first.

const F16_GUARD: f32 = 65472.0;

fn guard4(v: vec4<f32>) {
    if (any(abs(v) > vec4<f32>(F16_GUARD))) {
        bad[0] = 1u;
    }
}
