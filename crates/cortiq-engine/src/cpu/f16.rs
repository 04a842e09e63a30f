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

/// q . k with k stored as f16 (attention scores).
pub fn dot_f16(q: &[f32], k: &[f16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: as above.
        return unsafe { x86::dot_f16(q, k) };
    }
    q.iter().zip(k).map(|(a, b)| a * b.to_f32()).sum()
}

/// acc = f16(acc + v * s) element-wise, v stored as f16 (llama.cpp's `ggml_vec_mad_f16`).
pub fn mad_round_f16(acc: &mut [f32], v: &[f16], s: f32) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: as above.
        return unsafe { x86::mad_round_f16(acc, v, s) };
    }
    for (a, b) in acc.iter_mut().zip(v) {
        *a = round(b.to_f32() * s + *a);
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
pub(crate) mod x86 {
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
    #[inline]
    unsafe fn load8(p: *const half::f16) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }

    /// ggml's `ggml_vec_dot_f16` order: four 8-lane accumulators over 32-value steps,
    /// pairwise reduction, then two horizontal adds (the query is f16-exact already).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot_f16(q: &[f32], k: &[half::f16]) -> f32 {
        let n = q.len().min(k.len());
        let n32 = n / 32 * 32;
        let (pq, pk) = (q.as_ptr(), k.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        for i in (0..n32).step_by(32) {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = _mm256_fmadd_ps(load8(pk.add(i + 8 * j)), _mm256_loadu_ps(pq.add(i + 8 * j)), *a);
            }
        }
        let s01 = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
        let t0 = _mm_add_ps(_mm256_castps256_ps128(s01), _mm256_extractf128_ps(s01, 1));
        let t1 = _mm_hadd_ps(t0, t0);
        let mut sum = _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
        for i in n32..n {
            sum += q[i] * k[i].to_f32();
        }
        sum
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn mad_round_f16(acc: &mut [f32], v: &[half::f16], s: f32) {
        let n = acc.len().min(v.len());
        let n8 = n / 8 * 8;
        let sv = _mm256_set1_ps(s);
        let (pa, pv) = (acc.as_mut_ptr(), v.as_ptr());
        for i in (0..n8).step_by(8) {
            let r = _mm256_fmadd_ps(load8(pv.add(i)), sv, _mm256_loadu_ps(pa.add(i)));
            _mm256_storeu_ps(pa.add(i), r8(r));
        }
        for i in n8..n {
            acc[i] = super::round(v[i].to_f32().mul_add(s, acc[i]));
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
        let v: Vec<f16> = rng.normals(37, 1.0).into_iter().map(f16::from_f32).collect();
        let mut acc = a.clone();
        mad_round_f16(&mut acc, &v, 0.37);
        for i in 0..37 {
            let want = round(a[i] + v[i].to_f32() * 0.37);
            assert!((acc[i] - want).abs() <= 1e-3 * want.abs().max(1.0), "{} vs {want}", acc[i]);
        }
        let q = rng.normals(37, 1.0);
        let want: f32 = q.iter().zip(&v).map(|(a, b)| a * b.to_f32()).sum();
        assert!((dot_f16(&q, &v) - want).abs() < 1e-4 * 37.0);
        scale_round(&mut acc, 0.5);
        assert!(acc.iter().all(|v| *v == round(*v)));
    }
}
