//! Row kernels: one packed weight row dotted with quantized activations (the Q4/Q5/Q8
//! codecs, the K-quants, the IQ4 types) or with f32 activations (the float codecs). AVX2 versions where the CPU has them,
//! portable versions elsewhere; both are tested against the codec's reference dot.

use super::quant::{BlockQ8, QK};
use cortiq_core::Codec;
use half::f16;

/// A kernel dotting one packed row with a quantized activation row.
pub type Q8Kernel = fn(&[u8], &[BlockQ8]) -> f32;
/// The same for four activation rows at once (each weight block decoded once).
pub type Q8Kernel4 = fn(&[u8], [&[BlockQ8]; 4]) -> [f32; 4];
/// Consecutive rows (`row_bytes` each, back to back) against one activation row, y[i] for
/// row i: one call for a whole row range, each row's result `one`'s exactly.
pub type Q8KernelRows = fn(&[u8], usize, &[BlockQ8], &mut [f32]);

/// The same for eight activation rows at once (eight independent FMA chains in flight).
pub type Q8Kernel8 = fn(&[u8], [&[BlockQ8]; 8]) -> [f32; 8];

/// The int8-activation kernels of one codec.
#[derive(Clone, Copy)]
pub struct Q8Kernels {
    pub one: Q8Kernel,
    pub four: Q8Kernel4,
    pub rows: Q8KernelRows,
    /// Eight rows at once (the SIMD kernels; prompts take it before `four`).
    pub eight: Option<Q8Kernel8>,
}

/// Four rows through the one-row kernel (codecs without a dedicated four-row kernel).
macro_rules! four_by_one {
    ($k:path) => {{
        fn four(w: &[u8], x: [&[BlockQ8]; 4]) -> [f32; 4] {
            x.map(|xb| $k(w, xb))
        }
        four as Q8Kernel4
    }};
}

/// A row range through the one-row kernel (the portable kernels).
macro_rules! rows_by_one {
    ($k:path) => {{
        fn rows(w: &[u8], row_bytes: usize, x: &[BlockQ8], y: &mut [f32]) {
            for (wr, yv) in w.chunks_exact(row_bytes).zip(y) {
                *yv = $k(wr, x);
            }
        }
        rows as Q8KernelRows
    }};
}

/// The int8-activation kernels for `codec`, if it has them (else use `dot_f32`).
pub fn q8_kernel(codec: Codec) -> Option<Q8Kernels> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        return simd_kernels(codec, dot_tier());
    }
    match codec {
        Codec::Q4_0 | Codec::Q4Tiled => Some(Q8Kernels { one: q4_0, four: four_by_one!(q4_0), rows: rows_by_one!(q4_0), eight: None }),
        Codec::Q4_1 => Some(Q8Kernels { one: q4_1, four: four_by_one!(q4_1), rows: rows_by_one!(q4_1), eight: None }),
        Codec::Q8_0 => Some(Q8Kernels { one: q8_0, four: four_by_one!(q8_0), rows: rows_by_one!(q8_0), eight: None }),
        Codec::Q8Row => Some(Q8Kernels { one: q8_row, four: four_by_one!(q8_row), rows: rows_by_one!(q8_row), eight: None }),
        Codec::Q5_0 => Some(Q8Kernels { one: q5_0, four: four_by_one!(q5_0), rows: rows_by_one!(q5_0), eight: None }),
        Codec::Q5_1 => Some(Q8Kernels { one: q5_1, four: four_by_one!(q5_1), rows: rows_by_one!(q5_1), eight: None }),
        Codec::Q4K => Some(Q8Kernels { one: q4_k, four: four_by_one!(q4_k), rows: rows_by_one!(q4_k), eight: None }),
        Codec::Q6K => Some(Q8Kernels { one: q6_k, four: four_by_one!(q6_k), rows: rows_by_one!(q6_k), eight: None }),
        Codec::Q5K => Some(Q8Kernels { one: q5_k, four: four_by_one!(q5_k), rows: rows_by_one!(q5_k), eight: None }),
        Codec::Q3K => Some(Q8Kernels { one: q3_k, four: four_by_one!(q3_k), rows: rows_by_one!(q3_k), eight: None }),
        Codec::Q2K => Some(Q8Kernels { one: q2_k, four: four_by_one!(q2_k), rows: rows_by_one!(q2_k), eight: None }),
        Codec::IQ4NL => Some(Q8Kernels { one: iq4_nl, four: four_by_one!(iq4_nl), rows: rows_by_one!(iq4_nl), eight: None }),
        Codec::IQ4XS => Some(Q8Kernels { one: iq4_xs, four: four_by_one!(iq4_xs), rows: rows_by_one!(iq4_xs), eight: None }),
        _ => None,
    }
}

/// The AVX2 kernels for `codec`, their byte products by the instruction `tier` names (a
/// `DotTier` constant; the CPU must have AVX2, FMA and F16C and the tier's extension:
/// `has_avx2`, `dot_tier`).
#[cfg(target_arch = "x86_64")]
fn simd_kernels(codec: Codec, tier: u8) -> Option<Q8Kernels> {
    use avx2::*;
    match codec {
        Codec::Q4_0 | Codec::Q4Tiled => Some(kernels_at::<Q4_0>(tier)),
        Codec::Q4_1 => Some(kernels_at::<Q4_1>(tier)),
        Codec::Q8_0 => Some(kernels_at::<Q8_0>(tier)),
        Codec::Q8Row => Some(Q8Kernels { one: q8_row, four: four_by_one!(q8_row), rows: rows_by_one!(q8_row), eight: None }),
        Codec::Q5_0 => Some(kernels_at::<Q5_0>(tier)),
        Codec::Q5_1 => Some(kernels_at::<Q5_1>(tier)),
        Codec::Q4K => Some(kernels_at::<Q4K>(tier)),
        Codec::Q6K => Some(kernels_at::<Q6K>(tier)),
        Codec::Q5K => Some(kernels_at::<Q5K>(tier)),
        Codec::Q3K => Some(kernels_at::<Q3K>(tier)),
        Codec::Q2K => Some(kernels_at::<Q2K>(tier)),
        Codec::IQ4NL => Some(kernels_at::<IQ4NL>(tier)),
        Codec::IQ4XS => Some(kernels_at::<IQ4XS>(tier)),
        _ => None,
    }
}

/// The instruction the AVX2 int8 kernels take their byte products from; every tier gives
/// the same integers.
pub struct DotTier;

impl DotTier {
    /// AVX2's `maddubs` pairs summed by `madd`.
    pub const MADD: u8 = 0;
    /// AVX-VNNI's `dpbusd` (VEX-encoded).
    pub const AVX_VNNI: u8 = 1;
    /// AVX-512 VNNI's `dpbusd` on 256-bit registers (EVEX, with AVX-512 VL): CPUs with
    /// AVX-512 VNNI but no AVX-VNNI (AMD Zen 4, Intel Ice Lake and Cascade Lake).
    pub const AVX512_VNNI: u8 = 2;
}

/// This CPU's `DotTier`: AVX-VNNI where it has it, else AVX-512 VNNI + VL, else `maddubs`
/// (`CORTIQ_NO_VNNI` keeps `maddubs`).
pub fn dot_tier() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static TIER: OnceLock<u8> = OnceLock::new();
        *TIER.get_or_init(|| {
            if !has_avx2() || std::env::var_os("CORTIQ_NO_VNNI").is_some() {
                DotTier::MADD
            } else if is_x86_feature_detected!("avxvnni") {
                DotTier::AVX_VNNI
            } else if is_x86_feature_detected!("avx512vnni") && is_x86_feature_detected!("avx512vl") {
                DotTier::AVX512_VNNI
            } else {
                DotTier::MADD
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    DotTier::MADD
}

/// The int8 kernels this CPU runs, in words (`cortiq gpu` prints it).
pub fn kernels_in_use() -> &'static str {
    match (has_avx2(), dot_tier()) {
        (false, _) => "portable (no AVX2 + FMA + F16C, or CORTIQ_NO_SIMD)",
        (true, DotTier::AVX_VNNI) => "AVX2 + FMA + F16C, dpbusd by AVX-VNNI",
        (true, DotTier::AVX512_VNNI) => "AVX2 + FMA + F16C, dpbusd by AVX-512 VNNI on 256-bit registers",
        (true, _) => "AVX2 + FMA + F16C, maddubs + madd",
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

/// Q5_0 row (22-byte blocks) . q8 activations, portable.
pub fn q5_0(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (blk, xb) in w.chunks_exact(22).zip(x) {
        let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
        let mut acc = 0i32;
        for j in 0..16 {
            let lo = ((blk[6 + j] & 0x0F) as u32 | (((qh >> j) & 1) << 4)) as i32 - 16;
            let hi = ((blk[6 + j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4)) as i32 - 16;
            acc += lo * xb.qs[j] as i32 + hi * xb.qs[j + 16] as i32;
        }
        sum += f16_at(blk, 0) * xb.d * acc as f32;
    }
    sum
}

/// Q5_1 row (24-byte blocks: f16 d, f16 m, u32 of fifth bits, 16 nibble bytes) . q8
/// activations, portable.
pub fn q5_1(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (blk, xb) in w.chunks_exact(24).zip(x) {
        let qh = u32::from_le_bytes([blk[4], blk[5], blk[6], blk[7]]);
        let mut acc = 0i32;
        for j in 0..16 {
            let lo = ((blk[8 + j] & 0x0F) as u32 | (((qh >> j) & 1) << 4)) as i32;
            let hi = ((blk[8 + j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4)) as i32;
            acc += lo * xb.qs[j] as i32 + hi * xb.qs[j + 16] as i32;
        }
        sum += f16_at(blk, 0) * xb.d * acc as f32 + f16_at(blk, 2) * xb.s;
    }
    sum
}

/// Q4_K row (144-byte super-blocks of 8 x 32 values: f16 d, f16 dmin, 12 bytes of 6-bit
/// scales and mins, 128 bytes of nibbles, sub-block 2g in the low nibbles of bytes 32g..,
/// 2g + 1 in the high ones) . q8 activations (one block per sub-block), portable.
pub fn q4_k(w: &[u8], x: &[BlockQ8]) -> f32 {
    affine_k::<false>(w, x)
}

/// Q5_K row (176-byte super-blocks of 8 x 32 values: Q4_K's d, dmin and 12 bytes of scales
/// and mins, then 32 bytes of high bits, bit j of byte l the fifth bit of sub-block j's value
/// l, then Q4_K's 128 bytes of nibbles) . q8 activations (one block per sub-block), portable.
pub fn q5_k(w: &[u8], x: &[BlockQ8]) -> f32 {
    affine_k::<true>(w, x)
}

/// A Q4_K row (FIVE false) or Q5_K row . q8 activations: per sub-block j,
/// d * scale_j * (levels . x_j) - dmin * min_j * sum(x_j).
fn affine_k<const FIVE: bool>(w: &[u8], x: &[BlockQ8]) -> f32 {
    let (size, nibbles) = if FIVE { (176, 48) } else { (144, 16) };
    let mut sum = 0f32;
    for (sb, xs) in w.chunks_exact(size).zip(x.chunks_exact(8)) {
        let (d, dmin) = (f16_at(sb, 0), f16_at(sb, 2));
        for (j, xb) in xs.iter().enumerate() {
            let (sc, m) = cortiq_core::codec::k4_scale_min(j, &sb[4..16]);
            let q = &sb[nibbles + 32 * (j / 2)..][..32];
            let level = |l: usize| {
                let high = if FIVE { ((sb[16 + l] >> j) & 1) << 4 } else { 0 };
                ((q[l] >> (4 * (j % 2))) & 0x0F) | high
            };
            let acc: i32 = (0..32).map(|l| level(l) as i32 * xb.qs[l] as i32).sum();
            sum += d * sc as f32 * xb.d * acc as f32 - dmin * m as f32 * xb.s;
        }
    }
    sum
}

/// Q6_K row (210-byte super-blocks: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8
/// scales of 16 values each, f16 d) . q8 activations, portable. Activation block j = 4n + k
/// of a super-block holds values 128n + 32k..: low nibbles of ql[64n + 32 (k & 1)..] shifted
/// by 4 (k >> 1), high pairs of qh[32n..] shifted by 2k, scales 8n + 2k (+ 1 past 16 values).
pub fn q6_k(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (sb, xs) in w.chunks_exact(210).zip(x.chunks_exact(8)) {
        let d = f16_at(sb, 208);
        for (j, xb) in xs.iter().enumerate() {
            let (n, k) = (j / 4, j % 4);
            let ql = &sb[64 * n + 32 * (k & 1)..][..32];
            let qh = &sb[128 + 32 * n..][..32];
            let mut acc = [0i32; 2];
            for l in 0..32 {
                let q = (((ql[l] >> (4 * (k >> 1))) & 0x0F) | (((qh[l] >> (2 * k)) & 3) << 4)) as i32 - 32;
                acc[l / 16] += q * xb.qs[l] as i32;
            }
            let (s0, s1) = (sb[192 + 8 * n + 2 * k] as i8 as i32, sb[192 + 8 * n + 2 * k + 1] as i8 as i32);
            sum += d * xb.d * (s0 * acc[0] + s1 * acc[1]) as f32;
        }
    }
    sum
}

/// Q3_K row (110-byte super-blocks: 32 bytes of high bits, 64 of 2-bit levels, 12 of 6-bit
/// scales of 16 values each, f16 d) . q8 activations, portable. Activation block j = 4n + k
/// of a super-block holds values 128n + 32k + l: bits 2k.. of qs[32n + l], less 4 where bit j
/// of hmask[l] is clear; scales 2j and 2j + 1.
pub fn q3_k(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (sb, xs) in w.chunks_exact(110).zip(x.chunks_exact(8)) {
        let d = f16_at(sb, 108);
        let scales = cortiq_core::codec::q3_k_stored_scales(&sb[96..108]).map(|s| s as i32 - 32);
        for (j, xb) in xs.iter().enumerate() {
            let (n, k) = (j / 4, j % 4);
            let mut acc = [0i32; 2];
            for l in 0..32 {
                let q = ((sb[32 + 32 * n + l] >> (2 * k)) & 3) as i32 - if (sb[l] >> j) & 1 == 1 { 0 } else { 4 };
                acc[l / 16] += q * xb.qs[l] as i32;
            }
            sum += d * xb.d * (scales[2 * j] * acc[0] + scales[2 * j + 1] * acc[1]) as f32;
        }
    }
    sum
}

/// Q2_K row (84-byte super-blocks: 16 bytes of 4-bit (scale, min) pairs of 16 values each,
/// 64 of 2-bit levels, f16 d, f16 dmin) . q8 activations, portable. Activation block j = 4n +
/// k holds values 128n + 32k + l: bits 2k.. of qs[32n + l]; pairs 2j and 2j + 1.
pub fn q2_k(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (sb, xs) in w.chunks_exact(84).zip(x.chunks_exact(8)) {
        let (d, dmin) = (f16_at(sb, 80), f16_at(sb, 82));
        for (j, xb) in xs.iter().enumerate() {
            let (n, k) = (j / 4, j % 4);
            let (mut acc, mut xsum) = ([0i32; 2], [0i32; 2]);
            for l in 0..32 {
                acc[l / 16] += ((sb[16 + 32 * n + l] >> (2 * k)) & 3) as i32 * xb.qs[l] as i32;
                xsum[l / 16] += xb.qs[l] as i32;
            }
            let (p0, p1) = (sb[2 * j] as i32, sb[2 * j + 1] as i32);
            let scaled = (p0 & 15) * acc[0] + (p1 & 15) * acc[1];
            let mins = (p0 >> 4) * xsum[0] + (p1 >> 4) * xsum[1];
            sum += xb.d * (d * scaled as f32 - dmin * mins as f32);
        }
    }
    sum
}

/// The integer dot of 16 IQ4 nibble bytes (value l low, l + 16 high) with 32 int8 values.
fn iq4_block(q: &[u8], x: &[i8; 32]) -> i32 {
    let level = |n: u8| cortiq_core::codec::IQ4_LEVELS[n as usize] as i32;
    (0..16).map(|l| level(q[l] & 15) * x[l] as i32 + level(q[l] >> 4) * x[l + 16] as i32).sum()
}

/// IQ4_NL row (18-byte blocks: f16 d, 16 nibble bytes indexing the IQ4 levels) . q8
/// activations, portable.
pub fn iq4_nl(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (blk, xb) in w.chunks_exact(18).zip(x) {
        sum += f16_at(blk, 0) * xb.d * iq4_block(&blk[2..18], &xb.qs) as f32;
    }
    sum
}

/// IQ4_XS row (136-byte super-blocks: f16 d, 6-bit scales in 6 bytes, 8 blocks of 16 nibble
/// bytes) . q8 activations (one block per block), portable.
pub fn iq4_xs(w: &[u8], x: &[BlockQ8]) -> f32 {
    let mut sum = 0f32;
    for (sb, xs) in w.chunks_exact(136).zip(x.chunks_exact(8)) {
        let d = f16_at(sb, 0);
        for (k, xb) in xs.iter().enumerate() {
            let dot = iq4_block(&sb[8 + 16 * k..24 + 16 * k], &xb.qs);
            sum += d * cortiq_core::codec::iq4_xs_scale(sb, k) as f32 * xb.d * dot as f32;
        }
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

/// a . b over the shorter length: AVX2 + FMA where the CPU has them (8 lanes, two
/// accumulators), else 8 partial sums; either way not a serial left-to-right sum.
pub fn dot_slices(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU features were checked; the kernel reads n values of each slice.
        return unsafe { avx2::dot_slices(&a[..n], &b[..n]) };
    }
    let mut acc = [0f32; 8];
    let (ac, bc) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let tail: f32 = ac.remainder().iter().zip(bc.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ac.zip(bc) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Any codec's row . f32 activations, decoding 256 values at a time on the stack.
pub fn dot_f32(codec: Codec, w: &[u8], x: &[f32]) -> f32 {
    if codec == Codec::F32 {
        return w.chunks_exact(4).zip(x).map(|(b, &v)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * v).sum();
    }
    let chunk = codec.block_len().max(256).min(x.len().max(1));
    if codec == Codec::Q8Row || !x.len().is_multiple_of(chunk) {
        let mut buf = vec![0f32; x.len()];
        codec.unpack_row(w, &mut buf).expect("row length checked at load");
        return dot_slices(&buf, x);
    }
    let chunk_bytes = codec.row_bytes(chunk as u64).expect("whole blocks") as usize;
    let mut buf = [0f32; 256];
    let mut sum = 0f32;
    for (wb, xb) in w.chunks_exact(chunk_bytes).zip(x.chunks_exact(chunk)) {
        codec.unpack_row(wb, &mut buf[..chunk]).expect("row length checked at load");
        sum += dot_slices(&buf[..chunk], xb);
    }
    sum
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The same kernels with AVX2: nibbles widened to bytes, `maddubs` (u8 x i8 -> i16
    //! pairs) and `madd` against ones (-> i32), one FMA per block with the two scales; two
    //! more tiers with `dpbusd` (AVX-VNNI's, or AVX-512 VNNI's on 256-bit registers) in place
    //! of `maddubs` + `madd`, from the same source (the helpers inline into each tier's
    //! target-feature entry points; `DP` is the tier, a `DotTier` constant).
    use super::{BlockQ8, DotTier, Q8Kernels};
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn f16_at(p: *const u8) -> f32 {
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(p as *const u16) as i32)))
    }

    /// 16 bytes of nibbles -> 32 bytes: low nibbles in lanes 0..16, high in 16..32.
    #[inline(always)]
    unsafe fn nibbles_to_bytes(p: *const u8) -> __m256i {
        let tmp = _mm_loadu_si128(p as *const __m128i);
        let both = _mm256_set_m128i(_mm_srli_epi16(tmp, 4), tmp);
        _mm256_and_si256(both, _mm256_set1_epi8(0x0F))
    }

    /// Sum of u8 x i8 products as 8 f32 lanes, lane j of bytes 4j..4j + 4: one `dpbusd`
    /// (tiers AVX_VNNI, AVX512_VNNI), else `maddubs` pairs summed by `madd` (the same
    /// integers: the byte values the kernels pass keep the pair sums inside i16).
    #[inline(always)]
    unsafe fn mul_sum_us8<const DP: u8>(ax: __m256i, sy: __m256i) -> __m256 {
        if DP == DotTier::AVX_VNNI {
            return _mm256_cvtepi32_ps(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), ax, sy));
        }
        if DP == DotTier::AVX512_VNNI {
            return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy));
        }
        let dot16 = _mm256_maddubs_epi16(ax, sy);
        _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, _mm256_set1_epi16(1)))
    }

    /// Sum of i8 x i8 products as 8 f32 lanes (sign moved onto y so an unsigned x applies).
    #[inline(always)]
    unsafe fn mul_sum_i8<const DP: u8>(x: __m256i, y: __m256i) -> __m256 {
        mul_sum_us8::<DP>(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x))
    }

    #[inline(always)]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// Whole weight blocks of `block_bytes` that `w` and every activation row (`per` q8
    /// blocks to a weight block) all hold: the blocks a kernel may read.
    #[inline]
    fn whole_blocks(w: &[u8], block_bytes: usize, per: usize, xs: &[&[BlockQ8]]) -> usize {
        xs.iter().fold(w.len() / block_bytes, |n, x| n.min(x.len() / per))
    }

    /// Which weight codec a generic kernel decodes.
    #[derive(Clone, Copy)]
    enum Kind {
        Q4_0,
        Q4_1,
        Q5_0,
        Q5_1,
        Q8_0,
        IQ4NL,
    }

    impl Kind {
        const fn block_bytes(self) -> usize {
            match self {
                Kind::Q4_0 => 18,
                Kind::Q4_1 => 20,
                Kind::Q5_0 => 22,
                Kind::Q5_1 => 24,
                Kind::Q8_0 => 34,
                Kind::IQ4NL => 18,
            }
        }
    }

    /// The 32 bits at p as 32 bytes: 0xFF where bit j is set, 0 elsewhere (byte j).
    #[inline(always)]
    unsafe fn bytes_from_bits(p: *const u8) -> __m256i {
        let bits = std::ptr::read_unaligned(p as *const i32);
        // Byte j takes source byte j / 8, then every bit but bit j % 8 is set.
        let spread = _mm256_shuffle_epi8(_mm256_set1_epi32(bits), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
        let others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
        _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1))
    }

    /// Weight block `b` as (scale, min, 32 signed-or-unsigned bytes).
    #[inline(always)]
    unsafe fn load_block(kind: Kind, b: *const u8) -> (f32, f32, __m256i) {
        match kind {
            Kind::Q4_0 => (f16_at(b), 0.0, _mm256_sub_epi8(nibbles_to_bytes(b.add(2)), _mm256_set1_epi8(8))),
            Kind::Q4_1 => {
                // d and m are adjacent f16s: one conversion gives both.
                let dm = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(b as *const i32)));
                (_mm_cvtss_f32(dm), _mm_cvtss_f32(_mm_movehdup_ps(dm)), nibbles_to_bytes(b.add(4)))
            }
            Kind::Q5_0 => {
                // Value j is its nibble plus 16 times bit j of qh, less 16: as a signed
                // byte, the nibble with the high four bits set where bit j is clear.
                let high = _mm256_andnot_si256(bytes_from_bits(b.add(2)), _mm256_set1_epi8(0xF0u8 as i8));
                (f16_at(b), 0.0, _mm256_or_si256(nibbles_to_bytes(b.add(6)), high))
            }
            Kind::Q5_1 => {
                // As Q4_1's d and m; value j is its nibble plus 16 where bit j of qh is set.
                let dm = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(b as *const i32)));
                let high = _mm256_and_si256(bytes_from_bits(b.add(4)), _mm256_set1_epi8(0x10));
                (_mm_cvtss_f32(dm), _mm_cvtss_f32(_mm_movehdup_ps(dm)), _mm256_or_si256(nibbles_to_bytes(b.add(8)), high))
            }
            Kind::Q8_0 => (f16_at(b), 0.0, _mm256_loadu_si256(b.add(2) as *const __m256i)),
            Kind::IQ4NL => (f16_at(b), 0.0, _mm256_shuffle_epi8(iq4_levels(), nibbles_to_bytes(b.add(2)))),
        }
    }

    /// The 16 IQ4 levels in both 128-bit lanes, for `shuffle_epi8` to look nibbles up in.
    #[inline(always)]
    unsafe fn iq4_levels() -> __m256i {
        _mm256_broadcastsi128_si256(_mm_loadu_si128(cortiq_core::codec::IQ4_LEVELS.as_ptr() as *const __m128i))
    }

    /// Block dot as 8 f32 lanes: Q4_1 and Q5_1 levels are unsigned, the others signed.
    #[inline(always)]
    unsafe fn block_dot<const DP: u8>(kind: Kind, qx: __m256i, qy: __m256i) -> __m256 {
        match kind {
            Kind::Q4_1 | Kind::Q5_1 => mul_sum_us8::<DP>(qx, qy),
            _ => mul_sum_i8::<DP>(qx, qy),
        }
    }

    /// N activation rows against one weight row: each weight block is decoded once and
    /// used N times; per row the block order and FMA chain are ggml's.
    #[inline(always)]
    unsafe fn dot_n<const DP: u8, const N: usize>(kind: Kind, w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        let nb = whole_blocks(w, kind.block_bytes(), 1, &xs);
        let mut acc = [_mm256_setzero_ps(); N];
        let mut mins = [0f32; N];
        let p = w.as_ptr();
        for i in 0..nb {
            let (d, m, qx) = load_block(kind, p.add(kind.block_bytes() * i));
            for t in 0..N {
                let xb = xs[t].get_unchecked(i);
                if let Kind::Q4_1 | Kind::Q5_1 = kind {
                    mins[t] += m * xb.s;
                }
                let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
                acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb.d), block_dot::<DP>(kind, qx, qy), acc[t]);
            }
        }
        let mut out = [0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]) + mins[t];
        }
        out
    }

    /// a . b (equal lengths), 8 lanes in two accumulators, the tail serially.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_slices(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut s0, mut s1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 16 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)), s1);
            i += 16;
        }
        if i + 8 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            i += 8;
        }
        let mut sum = hsum(_mm256_add_ps(s0, s1));
        while i < n {
            sum += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        sum
    }

    /// A Q4_K / Q5_K superblock's 8 sub-block factors `d * scale_j` and `dmin * min_j` from
    /// its 12 packed bytes at `p`, converted together (the same products as one at a time).
    #[inline(always)]
    unsafe fn k4_factors(p: *const u8, d: f32, dmin: f32) -> ([f32; 8], [f32; 8]) {
        let (scales, mins) = cortiq_core::codec::k4_scales_mins(std::slice::from_raw_parts(p, 12));
        let times = |bytes: [u8; 8], f: f32| {
            let mut out = [0f32; 8];
            let v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(bytes.as_ptr() as *const __m128i)));
            _mm256_storeu_ps(out.as_mut_ptr(), _mm256_mul_ps(_mm256_set1_ps(f), v));
            out
        };
        (times(scales, d), times(mins, dmin))
    }

    /// Q4_K (see the portable `q4_k`), or Q5_K where FIVE (`q5_k`), against N activation
    /// rows, each super-block's factors unpacked and its nibbles widened once (Q5_K: the sub-block's fifth bits ORed
    /// in at bit 4): per sub-block one `maddubs` dot and one FMA with d x scale x the
    /// activation scale; the mins come off through the activation blocks' sums.
    #[inline(always)]
    unsafe fn affine_k_n<const DP: u8, const N: usize, const FIVE: bool>(w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        let (block, nibbles) = if FIVE { (176, 48) } else { (144, 16) };
        let nsb = whole_blocks(w, block, 8, &xs);
        let mut acc = [_mm256_setzero_ps(); N];
        let mut mins = [0f32; N];
        let (mask, one) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(1));
        for sb in 0..nsb {
            let b = w.as_ptr().add(block * sb);
            let (dsc, dmn) = k4_factors(b.add(4), f16_at(b), f16_at(b.add(2)));
            let high = if FIVE { _mm256_loadu_si256(b.add(16) as *const __m256i) } else { _mm256_setzero_si256() };
            for g in 0..4 {
                let bytes = _mm256_loadu_si256(b.add(nibbles + 32 * g) as *const __m256i);
                let q = [_mm256_and_si256(bytes, mask), _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask)];
                for (h, qh) in q.into_iter().enumerate() {
                    let j = 2 * g + h;
                    let qh = if FIVE {
                        // Bit j of each high-bit byte, moved to bit 4 (16-bit shifts: bit 0 of
                        // a byte after the right shift is its own bit j).
                        let bit = _mm256_and_si256(_mm256_srl_epi16(high, _mm_cvtsi32_si128(j as i32)), one);
                        _mm256_or_si256(qh, _mm256_slli_epi16(bit, 4))
                    } else {
                        qh
                    };
                    let (dj, mj) = (dsc[j], dmn[j]);
                    for t in 0..N {
                        let xb = xs[t].get_unchecked(8 * sb + j);
                        mins[t] += mj * xb.s;
                        let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
                        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dj * xb.d), mul_sum_us8::<DP>(qh, qy), acc[t]);
                    }
                }
            }
        }
        let mut out = [0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]) - mins[t];
        }
        out
    }

    /// Q6_K (see the portable `q6_k`) against N activation rows: per superblock the 16
    /// scales converted once; per activation block the 6-bit values rebuilt as signed bytes
    /// once, one `maddubs` dot whose 8 lanes (4 per 16 values) take their 16-value scale, one
    /// FMA with d x the activation scale.
    #[inline(always)]
    unsafe fn q6_k_n<const DP: u8, const N: usize>(w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        let nsb = whole_blocks(w, 210, 8, &xs);
        let mut acc = [_mm256_setzero_ps(); N];
        let (low4, low2, bias) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(3), _mm256_set1_epi8(32));
        for sb in 0..nsb {
            let b = w.as_ptr().add(210 * sb);
            let d = f16_at(b.add(208));
            let scales = byte_floats(_mm_loadu_si128(b.add(192) as *const __m128i));
            for j in 0..8 {
                let (n, k) = (j / 4, j % 4);
                let ql = _mm256_loadu_si256(b.add(64 * n + 32 * (k & 1)) as *const __m256i);
                let ql = if k >> 1 == 0 { ql } else { _mm256_srli_epi16(ql, 4) };
                let qh = _mm256_loadu_si256(b.add(128 + 32 * n) as *const __m256i);
                let qh = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * k as i32)), low2);
                let q = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(ql, low4), _mm256_slli_epi16(qh, 4)), bias);
                let lanes = half_pair(scales[n], j);
                for t in 0..N {
                    let xb = xs[t].get_unchecked(8 * sb + j);
                    let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
                    acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * xb.d), _mm256_mul_ps(mul_sum_i8::<DP>(q, qy), lanes), acc[t]);
                }
            }
        }
        let mut out = [0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        out
    }

    /// IQ4_XS (see the portable `iq4_xs`) against N activation rows: per block the nibbles
    /// looked up as signed levels once, one signed dot and one FMA with d x the block's scale
    /// x the activation scale.
    #[inline(always)]
    unsafe fn iq4_xs_n<const DP: u8, const N: usize>(w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        let nsb = whole_blocks(w, 136, 8, &xs);
        let mut acc = [_mm256_setzero_ps(); N];
        let levels = iq4_levels();
        for sb in 0..nsb {
            let b = w.as_ptr().add(136 * sb);
            let d = f16_at(b);
            let head = std::slice::from_raw_parts(b, 8);
            for k in 0..8 {
                let q = _mm256_shuffle_epi8(levels, nibbles_to_bytes(b.add(8 + 16 * k)));
                let dk = d * cortiq_core::codec::iq4_xs_scale(head, k) as f32;
                for t in 0..N {
                    let xb = xs[t].get_unchecked(8 * sb + k);
                    let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
                    acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dk * xb.d), mul_sum_i8::<DP>(q, qy), acc[t]);
                }
            }
        }
        let mut out = [0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        out
    }

    /// Lanes 0-3 from lane 2j' and lanes 4-7 from lane 2j' + 1 of `v` (j' = j % 4): the
    /// factors of activation block j's two 16-value halves, from a register holding those of
    /// blocks 4 (j / 4)..
    #[inline(always)]
    unsafe fn half_pair(v: __m256, j: usize) -> __m256 {
        let (a, b) = (2 * (j % 4) as i32, 2 * (j % 4) as i32 + 1);
        _mm256_permutevar8x32_ps(v, _mm256_set_epi32(b, b, b, b, a, a, a, a))
    }

    /// 16 signed bytes as two registers of 8 floats.
    #[inline(always)]
    unsafe fn byte_floats(bytes: __m128i) -> [__m256; 2] {
        [_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)))]
    }

    /// 16 signed bytes as two registers of 8 floats times `f`.
    #[inline(always)]
    unsafe fn bytes_times(bytes: __m128i, f: f32) -> [__m256; 2] {
        byte_floats(bytes).map(|v| _mm256_mul_ps(v, _mm256_set1_ps(f)))
    }

    /// Q3_K (see the portable `q3_k`) against N activation rows: per superblock the 16 scales
    /// unpacked and times d once; per activation block the levels
    /// rebuilt as signed bytes (2 bits, plus 4 where the high bit is set, less 4) once, one
    /// signed dot whose 8 lanes (4 per 16 values) take their half's factor, one FMA with the
    /// activation scale.
    #[inline(always)]
    unsafe fn q3_k_n<const DP: u8, const N: usize>(w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        let nsb = whole_blocks(w, 110, 8, &xs);
        let mut acc = [_mm256_setzero_ps(); N];
        let (low2, one, four) = (_mm256_set1_epi8(3), _mm256_set1_epi8(1), _mm256_set1_epi8(4));
        for sb in 0..nsb {
            let b = w.as_ptr().add(110 * sb);
            let stored = cortiq_core::codec::q3_k_stored_scales(std::slice::from_raw_parts(b.add(96), 12));
            let scales = _mm_sub_epi8(_mm_loadu_si128(stored.as_ptr() as *const __m128i), _mm_set1_epi8(32));
            let factors = bytes_times(scales, f16_at(b.add(108)));
            let hmask = _mm256_loadu_si256(b as *const __m256i);
            for j in 0..8 {
                let (n, k) = (j / 4, j % 4);
                // 16-bit shifts: the bits a byte takes from its neighbour are masked off.
                let ql = _mm256_loadu_si256(b.add(32 + 32 * n) as *const __m256i);
                let ql = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(2 * k as i32)), low2);
                let high = _mm256_and_si256(_mm256_srl_epi16(hmask, _mm_cvtsi32_si128(j as i32)), one);
                let q = _mm256_sub_epi8(_mm256_or_si256(ql, _mm256_slli_epi16(high, 2)), four);
                let lanes = half_pair(factors[n], j);
                for t in 0..N {
                    let xb = xs[t].get_unchecked(8 * sb + j);
                    let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
                    acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xb.d), _mm256_mul_ps(mul_sum_i8::<DP>(q, qy), lanes), acc[t]);
                }
            }
        }
        let mut out = [0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        out
    }

    /// Q2_K (see the portable `q2_k`) against N activation rows: per superblock the 16 scales
    /// times d and minimums times dmin as floats once; per activation block the 2-bit levels
    /// unpacked once, one unsigned dot with the levels and one with ones (the activations'
    /// 4-value sums, for the minimums), their 8 lanes (4 per 16 values) times their half's
    /// factors, one FMA with the activation scale.
    #[inline(always)]
    unsafe fn q2_k_n<const DP: u8, const N: usize>(w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        let nsb = whole_blocks(w, 84, 8, &xs);
        let mut acc = [_mm256_setzero_ps(); N];
        let (low2, ones, low4) = (_mm256_set1_epi8(3), _mm256_set1_epi8(1), _mm_set1_epi8(15));
        for sb in 0..nsb {
            let b = w.as_ptr().add(84 * sb);
            let pairs = _mm_loadu_si128(b as *const __m128i);
            let scales = bytes_times(_mm_and_si128(pairs, low4), f16_at(b.add(80)));
            let mins = bytes_times(_mm_and_si128(_mm_srli_epi16(pairs, 4), low4), f16_at(b.add(82)));
            for j in 0..8 {
                let (n, k) = (j / 4, j % 4);
                let ql = _mm256_loadu_si256(b.add(16 + 32 * n) as *const __m256i);
                let q = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(2 * k as i32)), low2);
                let (sc, mn) = (half_pair(scales[n], j), half_pair(mins[n], j));
                for t in 0..N {
                    let xb = xs[t].get_unchecked(8 * sb + j);
                    let qy = _mm256_loadu_si256(xb.qs.as_ptr() as *const __m256i);
                    let lanes = _mm256_fmsub_ps(mul_sum_us8::<DP>(q, qy), sc, _mm256_mul_ps(mul_sum_us8::<DP>(ones, qy), mn));
                    acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(xb.d), lanes, acc[t]);
                }
            }
        }
        let mut out = [0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        out
    }

    /// Codecs of the generic entry points (their const parameter).
    pub(super) const Q4_0: u8 = 0;
    pub(super) const Q4_1: u8 = 1;
    pub(super) const Q5_0: u8 = 2;
    pub(super) const Q8_0: u8 = 3;
    pub(super) const Q4K: u8 = 4;
    pub(super) const Q6K: u8 = 5;
    pub(super) const Q5K: u8 = 6;
    pub(super) const Q5_1: u8 = 7;
    pub(super) const IQ4NL: u8 = 8;
    pub(super) const IQ4XS: u8 = 9;
    pub(super) const Q3K: u8 = 10;
    pub(super) const Q2K: u8 = 11;

    /// Codec C's weight row against N activation rows. For one row this keeps ggml's block
    /// order and single FMA chain, so results stay bit-close to llama.cpp's CPU path (a
    /// second accumulator changes rounding enough to flip near-tied greedy tokens).
    #[inline(always)]
    unsafe fn dot_rows<const C: u8, const DP: u8, const N: usize>(w: &[u8], xs: [&[BlockQ8]; N]) -> [f32; N] {
        match C {
            Q4_0 => dot_n::<DP, N>(Kind::Q4_0, w, xs),
            Q4_1 => dot_n::<DP, N>(Kind::Q4_1, w, xs),
            Q5_0 => dot_n::<DP, N>(Kind::Q5_0, w, xs),
            Q5_1 => dot_n::<DP, N>(Kind::Q5_1, w, xs),
            Q8_0 => dot_n::<DP, N>(Kind::Q8_0, w, xs),
            Q4K => affine_k_n::<DP, N, false>(w, xs),
            Q5K => affine_k_n::<DP, N, true>(w, xs),
            Q6K => q6_k_n::<DP, N>(w, xs),
            IQ4NL => dot_n::<DP, N>(Kind::IQ4NL, w, xs),
            IQ4XS => iq4_xs_n::<DP, N>(w, xs),
            Q3K => q3_k_n::<DP, N>(w, xs),
            _ => q2_k_n::<DP, N>(w, xs),
        }
    }

    /// The target-feature entry points of one instruction-set tier: N activation rows, and
    /// a row range (each row as one row alone, inside one call: the per-row call into the
    /// kernel, and its setup, were a fifth of a decode token's time).
    macro_rules! tier {
        ($n:ident, $rows:ident, $features:literal, $dp:expr) => {
            #[target_feature(enable = $features)]
            unsafe fn $n<const C: u8, const N: usize>(w: &[u8], x: [&[BlockQ8]; N]) -> [f32; N] {
                dot_rows::<C, { $dp }, N>(w, x)
            }
            #[target_feature(enable = $features)]
            unsafe fn $rows<const C: u8>(w: &[u8], row_bytes: usize, x: &[BlockQ8], y: &mut [f32]) {
                for (wr, yv) in w.chunks_exact(row_bytes).zip(y) {
                    *yv = dot_rows::<C, { $dp }, 1>(wr, [x])[0];
                }
            }
        };
    }
    tier!(n_avx2, rows_avx2, "avx2,fma,f16c", DotTier::MADD);
    tier!(n_vnni, rows_vnni, "avx2,fma,f16c,avxvnni", DotTier::AVX_VNNI);
    tier!(n_vnni512, rows_vnni512, "avx2,fma,f16c,avx512vnni,avx512vl", DotTier::AVX512_VNNI);

    // Safe wrappers: only handed out by `q8_kernel` after `has_avx2()` and `dot_tier()`
    // confirmed the CPU features of tier DP; every read stays inside `w` and `x` (block
    // count is the min of both).
    fn n<const C: u8, const DP: u8, const N: usize>(w: &[u8], x: [&[BlockQ8]; N]) -> [f32; N] {
        unsafe {
            match DP {
                DotTier::AVX_VNNI => n_vnni::<C, N>(w, x),
                DotTier::AVX512_VNNI => n_vnni512::<C, N>(w, x),
                _ => n_avx2::<C, N>(w, x),
            }
        }
    }
    fn one<const C: u8, const DP: u8>(w: &[u8], x: &[BlockQ8]) -> f32 {
        n::<C, DP, 1>(w, [x])[0]
    }
    fn rows<const C: u8, const DP: u8>(w: &[u8], row_bytes: usize, x: &[BlockQ8], y: &mut [f32]) {
        unsafe {
            match DP {
                DotTier::AVX_VNNI => rows_vnni::<C>(w, row_bytes, x, y),
                DotTier::AVX512_VNNI => rows_vnni512::<C>(w, row_bytes, x, y),
                _ => rows_avx2::<C>(w, row_bytes, x, y),
            }
        }
    }

    /// Codec C's kernels of tier DP.
    fn kernels<const C: u8, const DP: u8>() -> Q8Kernels {
        Q8Kernels { one: one::<C, DP>, four: n::<C, DP, 4>, rows: rows::<C, DP>, eight: Some(n::<C, DP, 8>) }
    }

    /// Codec C's kernels of `tier` (a `DotTier` constant; the caller checked the CPU).
    pub(super) fn kernels_at<const C: u8>(tier: u8) -> Q8Kernels {
        match tier {
            DotTier::AVX_VNNI => kernels::<C, { DotTier::AVX_VNNI }>(),
            DotTier::AVX512_VNNI => kernels::<C, { DotTier::AVX512_VNNI }>(),
            _ => kernels::<C, { DotTier::MADD }>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::quant::quantize_row;
    use super::*;
    use cortiq_core::codec::ALL_CODECS;
    use cortiq_core::rng::SplitMix64;

    /// This CPU's VNNI kernels (AVX-VNNI's or AVX-512 VNNI's `dpbusd`) give the AVX2
    /// kernels' results bit for bit (same integers per lane, same float operations), for
    /// every codec that has them, on blocks with the extreme values (Q8_0 weights at +-127,
    /// activations at +-127) as well as random ones.
    #[test]
    fn vnni_kernels_equal_the_avx2_kernels() {
        #[cfg(target_arch = "x86_64")]
        {
            let tier = dot_tier();
            if tier == DotTier::MADD {
                eprintln!("SKIP vnni_kernels_equal_the_avx2_kernels: this CPU has neither AVX-VNNI nor AVX-512 VNNI + VL (or CORTIQ_NO_VNNI is set)");
                return;
            }
            eprintln!("vnni_kernels_equal_the_avx2_kernels: tier {tier} (1 AVX-VNNI, 2 AVX-512 VNNI)");
            let mut rng = SplitMix64::fresh();
            let seed = rng.seed();
            for c in ALL_CODECS {
                let (Some(avx2), Some(vnni)) = (simd_kernels(c, DotTier::MADD), simd_kernels(c, tier)) else { continue };
                for extreme in [false, true] {
                    let n = 3 * c.block_len().max(256);
                    let w: Vec<f32> = if extreme { (0..n).map(|i| if i % 3 == 0 { -1.0 } else { 1.0 }).collect() } else { rng.normals(n, 0.05) };
                    let x: Vec<f32> = if extreme { (0..n).map(|i| if i % 5 == 0 { 1.0 } else { -1.0 }).collect() } else { rng.normals(n, 1.0) };
                    let packed = c.pack_row(&w).unwrap();
                    let mut xq = vec![BlockQ8::default(); n / 32];
                    quantize_row(&x, &mut xq);
                    let xs = [&xq[..], &xq[..], &xq[..], &xq[..]];
                    assert_eq!((avx2.one)(&packed, &xq).to_bits(), (vnni.one)(&packed, &xq).to_bits(), "{c} one row (seed {seed})");
                    assert_eq!((avx2.four)(&packed, xs).map(f32::to_bits), (vnni.four)(&packed, xs).map(f32::to_bits), "{c} four rows (seed {seed})");
                    let (mut ya, mut yv) = ([0f32; 2], [0f32; 2]);
                    (avx2.rows)(&packed.repeat(2), packed.len(), &xq, &mut ya);
                    (vnni.rows)(&packed.repeat(2), packed.len(), &xq, &mut yv);
                    assert_eq!(ya.map(f32::to_bits), yv.map(f32::to_bits), "{c} row range (seed {seed})");
                }
            }
        }
    }

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
                    let got = (k.one)(&packed, &xq);
                    let four = (k.four)(&packed, [&xq, &xq, &xq, &xq]);
                    assert!(four.iter().all(|v| (v - got).abs() <= 1e-4 * norm), "{c}: four-row kernel {four:?} vs {got} (seed {seed})");
                    if let Some(eight) = k.eight {
                        let e = eight(&packed, [&xq[..]; 8]);
                        assert!(e.iter().all(|v| v.to_bits() == four[0].to_bits()), "{c}: eight-row kernel {e:?} vs four-row {} (seed {seed})", four[0]);
                    }
                    let mut rows = [f32::NAN; 3];
                    (k.rows)(&packed.repeat(3), packed.len(), &xq, &mut rows);
                    assert!(rows.iter().all(|v| v.to_bits() == got.to_bits()), "{c}: row range {rows:?} vs one row {got} (seed {seed})");
                    assert!(got.is_finite());
                    assert!((got - reference).abs() <= 2e-2 * norm, "{c} n={n}: q8 kernel {got} vs {reference} (seed {seed})");
                    let portable = match c {
                        Codec::Q4_0 | Codec::Q4Tiled => q4_0(&packed, &xq),
                        Codec::Q4_1 => q4_1(&packed, &xq),
                        Codec::Q8_0 => q8_0(&packed, &xq),
                        Codec::Q5_0 => q5_0(&packed, &xq),
                        Codec::Q5_1 => q5_1(&packed, &xq),
                        Codec::Q4K => q4_k(&packed, &xq),
                        Codec::Q5K => q5_k(&packed, &xq),
                        Codec::Q6K => q6_k(&packed, &xq),
                        Codec::Q3K => q3_k(&packed, &xq),
                        Codec::Q2K => q2_k(&packed, &xq),
                        Codec::IQ4NL => iq4_nl(&packed, &xq),
                        Codec::IQ4XS => iq4_xs(&packed, &xq),
                        _ => q8_row(&packed, &xq),
                    };
                    assert!((got - portable).abs() <= 1e-4 * norm, "{c}: simd {got} vs portable {portable} (seed {seed})");
                }
            }
        }
    }
}
