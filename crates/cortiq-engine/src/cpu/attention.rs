//! Causal attention of one query head over cached K/V rows, with the numerics of
//! llama.cpp's CPU flash attention (its default): the query rounded to f16, scores in f32,
//! an online softmax, and the weighted V sum accumulated in f16. Matching those roundings
//! keeps greedy decoding on llama.cpp's trajectory.

use super::f16::{dot_f16, mad_round_f16, scale_round};
use half::f16;

/// The row-level helpers the attention body uses, so the AVX2 build can inline its own.
struct Helpers {
    dot: fn(&[f32], &[f16]) -> f32,
    mad_round: fn(&mut [f32], &[f16], f32),
    scale_round: fn(&mut [f32], f32),
}

/// out (head_dim) = softmax(q . K^T * scale) . V over positions `start..n`.
/// `keys`/`values` hold rows of `stride` values; this head's slice starts at `offset`.
#[allow(clippy::too_many_arguments)]
pub fn attend_head(q: &[f32], keys: &[f16], values: &[f16], (start, n): (usize, usize), stride: usize, offset: usize, scale: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if super::dot::has_avx2() {
        // SAFETY: the CPU has AVX2/FMA/F16C.
        return unsafe { attend_head_avx2(q, keys, values, (start, n), stride, offset, scale, out) };
    }
    let h = Helpers { dot: dot_f16, mad_round: mad_round_f16, scale_round };
    attend_head_body(&h, q, keys, values, (start, n), stride, offset, scale, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn attend_head_avx2(q: &[f32], keys: &[f16], values: &[f16], (start, n): (usize, usize), stride: usize, offset: usize, scale: f32, out: &mut [f32]) {
    let h = Helpers { dot: |a, b| unsafe { super::f16::x86::dot_f16(a, b) }, mad_round: |a, v, s| unsafe { super::f16::x86::mad_round_f16(a, v, s) }, scale_round: |a, s| unsafe { super::f16::x86::scale_round(a, s) } };
    attend_head_body(&h, q, keys, values, (start, n), stride, offset, scale, out)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn attend_head_body(h: &Helpers, q: &[f32], keys: &[f16], values: &[f16], (start, n): (usize, usize), stride: usize, offset: usize, scale: f32, out: &mut [f32]) {
    let hd = q.len();
    let mut max = f32::NEG_INFINITY;
    let mut sum = 0f32;
    out.fill(0.0);
    for t in start..n {
        let row = t * stride + offset;
        let s = (h.dot)(q, &keys[row..row + hd]) * scale;
        let mut ms = 1.0;
        let mut vs = 1.0;
        if s > max {
            ms = (max - s).exp();
            max = s;
            if ms != 1.0 {
                (h.scale_round)(out, ms);
            }
        } else {
            vs = (s - max).exp();
        }
        (h.mad_round)(out, &values[row..row + hd], vs);
        sum = sum * ms + vs;
    }
    let inv = 1.0 / sum;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::ops::softmax;
    use cortiq_core::rng::SplitMix64;

    /// Against a plain two-pass softmax in f64: only the f16 roundings separate them.
    #[test]
    fn online_f16_attention_matches_exact_attention() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for n in [1usize, 7, 130] {
            let (hd, stride, offset) = (64, 192, 64);
            let keys: Vec<f16> = rng.normals(n * stride, 1.0).into_iter().map(f16::from_f32).collect();
            let values: Vec<f16> = rng.normals(n * stride, 1.0).into_iter().map(f16::from_f32).collect();
            let q = rng.normals(hd, 1.0);
            let scale = 0.125;
            let mut out = vec![0f32; hd];
            attend_head(&q, &keys, &values, (0, n), stride, offset, scale, &mut out);
            let mut p: Vec<f32> = (0..n).map(|t| q.iter().zip(&keys[t * stride + offset..]).map(|(a, b)| a * b.to_f32()).sum::<f32>() * scale).collect();
            softmax(&mut p);
            for d in 0..hd {
                let want: f32 = (0..n).map(|t| p[t] * values[t * stride + offset + d].to_f32()).sum();
                assert!((out[d] - want).abs() < 5e-3, "n={n} d={d}: {} vs {want} (seed {seed})", out[d]);
            }
        }
    }
}
