//! f16 rounding of f32 values (what storing to an f16 buffer and reading it back does),
//! with F16C instructions where the CPU has them. Used where cortiq mirrors llama.cpp's
//! f16 buffers: the KV cache, the query of attention, the f16 attention accumulator.

use super::dot::has_avx2;
use half::f16;

/// Round one value to f16 precision.
pub fn round(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

/// Round every value in place.
pub fn round_slice(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: has_avx2() confirmed AVX2 + FMA + F16C.
        return unsafe { x86::round_slice(x) };
    }
    x.iter_mut().for_each(|v| *v = round(*v));
}

/// acc = f16(acc + v * s) element-wise (llama.cpp's `ggml_vec_mad_f16`).
pub fn mad_round(acc: &mut [f32], v: &[f32], s: f32) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: as above; lengths are checked inside.
        return unsafe { x86::mad_round(acc, v, s) };
    }
    for (a, &b) in acc.iter_mut().zip(v) {
        *a = round(b * s + *a);
    }
}

/// acc = f16(acc * s) element-wise (llama.cpp's `ggml_vec_scale_f16`).
pub fn scale_round(acc: &mut [f32], s: f32) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: as above.
        return unsafe { x86::scale_round(acc, s) };
    }
    acc.iter_mut().for_each(|a| *a = round(*a * s));
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn r8(v: __m256) -> __m256 {
        _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn round_slice(x: &mut [f32]) {
        let n8 = x.len() / 8 * 8;
        let p = x.as_mut_ptr();
        for i in (0..n8).step_by(8) {
            _mm256_storeu_ps(p.add(i), r8(_mm256_loadu_ps(p.add(i))));
        }
        for v in &mut x[n8..] {
            *v = super::round(*v);
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn mad_round(acc: &mut [f32], v: &[f32], s: f32) {
        let n = acc.len().min(v.len());
        let n8 = n / 8 * 8;
        let sv = _mm256_set1_ps(s);
        let (pa, pv) = (acc.as_mut_ptr(), v.as_ptr());
        for i in (0..n8).step_by(8) {
            let r = _mm256_fmadd_ps(_mm256_loadu_ps(pv.add(i)), sv, _mm256_loadu_ps(pa.add(i)));
            _mm256_storeu_ps(pa.add(i), r8(r));
        }
        for i in n8..n {
            acc[i] = super::round(v[i].mul_add(s, acc[i]));
        }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn scale_round(acc: &mut [f32], s: f32) {
        let n8 = acc.len() / 8 * 8;
        let sv = _mm256_set1_ps(s);
        let pa = acc.as_mut_ptr();
        for i in (0..n8).step_by(8) {
            _mm256_storeu_ps(pa.add(i), r8(_mm256_mul_ps(_mm256_loadu_ps(pa.add(i)), sv)));
        }
        for a in &mut acc[n8..] {
            *a = super::round(*a * s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    #[test]
    fn simd_rounding_equals_half_crate_rounding() {
        let mut rng = SplitMix64::fresh();
        let x = rng.normals(37, 3.0);
        let mut a = x.clone();
        round_slice(&mut a);
        for (r, v) in a.iter().zip(&x) {
            assert_eq!(*r, round(*v));
        }
        let v = rng.normals(37, 1.0);
        let mut acc = a.clone();
        mad_round(&mut acc, &v, 0.37);
        for i in 0..37 {
            assert!((acc[i] - round(a[i] + v[i] * 0.37)).abs() <= f32::EPSILON * 8.0 * acc[i].abs().max(1.0));
        }
        scale_round(&mut acc, 0.5);
        assert!(acc.iter().all(|v| *v == round(*v)));
    }
}
