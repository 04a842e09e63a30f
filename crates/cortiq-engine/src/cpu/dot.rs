//! Row kernels: one packed weight row dotted with quantized activations (int8 codecs) or
//! with f32 activations (float and K-quant codecs). AVX2 versions where the CPU has them,
//! portable versions elsewhere; both are tested against the codec's reference dot.

use super::quant::{BlockQ8, QK};
use cortiq_core::Codec;
use half::f16;

/// A kernel dotting one packed row with a quantized activation row.
pub type Q8Kernel = fn(&[u8], &[BlockQ8]) -> f32;

/// The int8-activation kernel for `codec`, if it has one (else use `dot_f32`).
pub fn q8_kernel(codec: Codec) -> Option<Q8Kernel> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        return match codec {
            Codec::Q4_0 | Codec::Q4Tiled => Some(avx2::q4_0),
            Codec::Q4_1 => Some(avx2::q4_1),
            Codec::Q8_0 => Some(avx2::q8_0),
            Codec::Q8Row => Some(q8_row),
            _ => None,
        };
    }
    match codec {
        Codec::Q4_0 | Codec::Q4Tiled => Some(q4_0),
        Codec::Q4_1 => Some(q4_1),
        Codec::Q8_0 => Some(q8_0),
        Codec::Q8Row => Some(q8_row),
        _ => None,
    }
}

/// Whether the AVX2 + FMA + F16C kernels are in use on this CPU.
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            std::env::var_os("CORTIQ_NO_SIMD").is_none()
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

/// Q4_0 row (18-byte blocks) . q8 activations, portable.
pub fn q4_0(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (blk, xb) in w.chunks_exact(18).zip(x) {
        let mut acc = 0i32;
        for j in 0..16 {
            acc += ((blk[2 + j] & 0x0F) as i32 - 8) * xb.qs[j] as i32;
            acc += ((blk[2 + j] >> 4) as i32 - 8) * xb.qs[j + 16] as i32;
        }
        sum += f16_at(blk, 0) * xb.d * acc as f32;
    }
    sum
}

/// Q4_1 row (20-byte blocks) . q8 activations, portable.
pub fn q4_1(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (blk, xb) in w.chunks_exact(20).zip(x) {
        let mut acc = 0i32;
        for j in 0..16 {
            acc += (blk[4 + j] & 0x0F) as i32 * xb.qs[j] as i32;
            acc += (blk[4 + j] >> 4) as i32 * xb.qs[j + 16] as i32;
        }
        sum += f16_at(blk, 0) * xb.d * acc as f32 + f16_at(blk, 2) * xb.s;
    }
    sum
}

/// Q8_0 row (34-byte blocks) . q8 activations, portable.
pub fn q8_0(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (blk, xb) in w.chunks_exact(34).zip(x) {
        let acc: i32 = blk[2..34].iter().zip(&xb.qs).map(|(&a, &b)| a as i8 as i32 * b as i32).sum();
        sum += f16_at(blk, 0) * xb.d * acc as f32;
    }
    sum
}

/// q8_row (f32 scale + int8 per value) . q8 activations.
pub fn q8_row(w: &[u8], x: &[BlockQ8]) -> f32 {
    let scale = f32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    let mut sum = 0f32;
    for (qw, xb) in w[4..].chunks_exact(QK).zip(x) {
        let acc: i32 = qw.iter().zip(&xb.qs).map(|(&a, &b)| a as i8 as i32 * b as i32).sum();
        sum += xb.d * acc as f32;
    }
    sum * scale
}

/// Any codec's row . f32 activations, decoding 256 values at a time on the stack.
pub fn dot_f32(codec: Codec, w: &[u8], x: &[f32]) -> f32 {
    if codec == Codec::F32 {
        return w.chunks_exact(4).zip(x).map(|(b, &v)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * v).sum();
    }
    let chunk = codec.block_len().max(256).min(x.len().max(1));
    if codec == Codec::Q8Row || x.len() % chunk != 0 {
        let mut buf = vec![0f32; x.len()];
        codec.unpack_row(w, &mut buf).expect("row length checked at load");
        return buf.iter().zip(x).map(|(a, b)| a * b).sum();
    }
    let chunk_bytes = codec.row_bytes(chunk as u64).expect("whole blocks") as usize;
    let mut buf = [0f32; 256];
    let mut sum = 0f32;
    for (wb, xb) in w.chunks_exact(chunk_bytes).zip(x.chunks_exact(chunk)) {
        codec.unpack_row(wb, &mut buf[..chunk]).expect("row length checked at load");
        sum += buf[..chunk].iter().zip(xb).map(|(a, b)| a * b).sum::<f32>();
    }
    sum
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The same kernels with AVX2: nibbles widened to bytes, `maddubs` (u8 x i8 -> i16
    //! pairs) and `madd` against ones (-> i32), one FMA per block with the two scales.
    use super::{BlockQ8, Q8Kernel};
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn f16_at(p: *const u8) -> f32 {
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(p as *const u16) as i32)))
    }

    /// 16 bytes of nibbles -> 32 bytes: low nibbles in lanes 0..16, high in 16..32.
    #[target_feature(enable = "avx2")]
    unsafe fn nibbles_to_bytes(p: *const u8) -> __m256i {
        let tmp = _mm_loadu_si128(p as *const __m128i);
        let both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
        _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
    }

    /// Sum of u8 x i8 products as 8 f32 lanes.
    #[target_feature(enable = "avx2")]
    unsafe fn mul_sum_us8(ax: __m256i, sy: __m256i) -> __m256 {
        let dot16 = _mm256_maddubs_epi16(ax, sy);
        _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, _mm256_set1_epi16(1)))
    }

    /// Sum of i8 x i8 products as 8 f32 lanes (sign moved onto y so maddubs applies).
    #[target_feature(enable = "avx2")]
    unsafe fn mul_sum_i8(x: __m256i, y: __m256i) -> __m256 {
        mul_sum_us8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x))
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn q4_0_impl(w: &[u8], x: &[BlockQ8]) -> f32 {
        let n = x.len().min(w.len() / 18);
        let mut acc = _mm256_setzero_ps();
        let p = w.as_ptr();
        for (i, xb) in x.iter().enumerate().take(n) {
            let b = p.add(18 * i);
            let qx = _mm256_sub_epi8(nibbles_to_bytes(b.add(2)), _mm256_set1_epi8(8));
            let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
            let d = _mm256_set1_ps(f16_at(b) * xb.d);
            acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, qy), acc);
        }
        hsum(acc)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn q4_1_impl(w: &[u8], x: &[BlockQ8]) -> f32 {
        let n = x.len().min(w.len() / 20);
        let mut acc = _mm256_setzero_ps();
        let mut mins = 0f32;
        let p = w.as_ptr();
        for (i, xb) in x.iter().enumerate().take(n) {
            let b = p.add(20 * i);
            mins += f16_at(b.add(2)) * xb.s;
            let qx = nibbles_to_bytes(b.add(4));
            let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
            let d = _mm256_set1_ps(f16_at(b) * xb.d);
            acc = _mm256_fmadd_ps(d, mul_sum_us8(qx, qy), acc);
        }
        hsum(acc) + mins
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn q8_0_impl(w: &[u8], x: &[BlockQ8]) -> f32 {
        let n = x.len().min(w.len() / 34);
        let mut acc = _mm256_setzero_ps();
        let p = w.as_ptr();
        for (i, xb) in x.iter().enumerate().take(n) {
            let b = p.add(34 * i);
            let qx = _mm256_loadu_si256(b.add(2) as *const __m256i);
            let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
            let d = _mm256_set1_ps(f16_at(b) * xb.d);
            acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, qy), acc);
        }
        hsum(acc)
    }

    // Safe wrappers: only handed out by `q8_kernel` after `has_avx2()` confirmed the CPU
    // features; every pointer read stays inside `w` (block count is min of both lengths).
    pub(super) fn q4_0(w: &[u8], x: &[BlockQ8]) -> f32 {
        unsafe { q4_0_impl(w, x) }
    }
    pub(super) fn q4_1(w: &[u8], x: &[BlockQ8]) -> f32 {
        unsafe { q4_1_impl(w, x) }
    }
    pub(super) fn q8_0(w: &[u8], x: &[BlockQ8]) -> f32 {
        unsafe { q8_0_impl(w, x) }
    }
    const _: [Q8Kernel; 3] = [q4_0, q4_1, q8_0];
}

#[cfg(test)]
mod tests {
    use super::super::quant::quantize_row;
    use super::*;
    use cortiq_core::codec::ALL_CODECS;
    use cortiq_core::rng::SplitMix64;

    /// Every fast kernel against the codec's f64 reference dot on the same quantized
    /// activations; the int8 activation rounding is the only extra error (bounded by
    /// |w| |x| / 127 per block, far below the 2e-2 relative bound used here).
    #[test]
    fn fast_kernels_match_the_codec_reference_dot() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for c in ALL_CODECS {
            for blocks in [1usize, 5, 19] {
                let n = blocks * c.block_len().max(32);
                let w = rng.normals(n, 0.05);
                let x = rng.normals(n, 1.0);
                let packed = c.pack_row(&w).unwrap();
                let reference = c.dot_row(&packed, &x).unwrap();
                let norm = {
                    let mut dec = vec![0f32; n];
                    c.unpack_row(&packed, &mut dec).unwrap();
                    (dec.iter().map(|v| v * v).sum::<f32>() * x.iter().map(|v| v * v).sum::<f32>()).sqrt()
                };
                let f = dot_f32(c, &packed, &x);
                assert!((f - reference).abs() <= 1e-4 * norm, "{c} n={n}: dot_f32 {f} vs {reference} (seed {seed})");
                if let Some(k) = q8_kernel(c) {
                    let mut xq = vec![BlockQ8::default(); n / 32];
                    quantize_row(&x, &mut xq);
                    let got = k(&packed, &xq);
                    assert!(got.is_finite());
                    assert!((got - reference).abs() <= 2e-2 * norm, "{c} n={n}: q8 kernel {got} vs {reference} (seed {seed})");
                    let portable = match c {
                        Codec::Q4_0 | Codec::Q4Tiled => q4_0(&packed, &xq),
                        Codec::Q4_1 => q4_1(&packed, &xq),
                        Codec::Q8_0 => q8_0(&packed, &xq),
                        _ => q8_row(&packed, &xq),
                    };
                    assert!((got - portable).abs() <= 1e-4 * norm, "{c}: simd {got} vs portable {portable} (seed {seed})");
                }
            }
        }
    }
}
