//! Activations quantized to int8 once per op, in 32-value blocks (ggml's q8_0/q8_1 rule:
//! d = max|x| / 127, q = round(x / d), scales kept at f16 precision), so every weight row
//! is dotted with integer multiplies. This is also what llama.cpp's CPU path does, which
//! keeps our greedy tokens on its trajectory.

use half::f16;

/// One block of 32 quantized activations.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
pub struct BlockQ8 {
    /// Scale, rounded to f16 precision.
    pub d: f32,
    /// d * sum(qs), rounded to f16 precision (for codecs with a per-block minimum).
    pub s: f32,
    pub qs: [i8; 32],
}

pub const QK: usize = 32;

#[inline(always)]
fn round_f16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

/// Quantize `x` (length a multiple of 32) into `out` (x.len() / 32 blocks).
pub fn quantize_row(x: &[f32], out: &mut [BlockQ8]) {
    #[cfg(target_arch = "x86_64")]
    if super::dot::has_avx2() {
        // SAFETY: the CPU has AVX2/FMA/F16C; the body is the portable code, compiled with
        // those features so rounding and f16 conversion become single instructions.
        return unsafe { quantize_row_avx2(x, out) };
    }
    quantize_row_portable(x, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn quantize_row_avx2(x: &[f32], out: &mut [BlockQ8]) {
    quantize_row_portable(x, out)
}

#[inline(always)]
fn quantize_row_portable(x: &[f32], out: &mut [BlockQ8]) {
    debug_assert_eq!(x.len(), out.len() * QK);
    for (xb, b) in x.chunks_exact(QK).zip(out.iter_mut()) {
        let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        // ggml's x86 rule: id = 127 / max (not 1 / d), rounding to nearest even.
        let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        let mut sum = 0i32;
        for (q, &v) in b.qs.iter_mut().zip(xb) {
            let r = (v * id).round_ties_even() as i32;
            *q = r as i8;
            sum += r;
        }
        b.d = round_f16(d);
        b.s = round_f16(sum as f32 * d);
    }
}

/// Quantize a (rows, cols) activation matrix row by row; returns rows * cols/32 blocks.
pub fn quantize_rows(x: &[f32], cols: usize) -> Vec<BlockQ8> {
    let mut out = vec![BlockQ8::default(); x.len() / QK];
    for (xr, orow) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols / QK)) {
        quantize_row(xr, orow);
    }
    out
}
