//! Weight codecs a GPU backend has no kernel of its own for, rewritten on upload into one it
//! has (the file's bytes stay as they are; the CPU reads those):
//! - Q5_0 (Q4_K_M's fallback for rows that are not whole superblocks, e.g. smollm2's 576) as
//!   Q8_0: `d * (q - 16)` is Q8_0's `d * q'` with q' = q - 16 in -16..15. Exact.
//! - IQ4_NL as Q8_0: `d * LEVELS[q]` is Q8_0's `d * q'` with q' = LEVELS[q], an int8. Exact.
//! - IQ4_XS as Q8_0: each 32-value block's scale `d * (ls - 32)` becomes Q8_0's f16 d
//!   (relative error at most 2^-11 a block), the levels its int8 values.
//! - q8_row as Q8_0 (for CUDA; wgpu reads q8_row itself): the row's f32 scale, rounded to
//!   f16, becomes every block's d (relative error at most 2^-11; a scale below f16's normal
//!   range is refused rather than rounded further), the int8 values stay.
//! - Q3_K as Q6_K: `d * (sc - 32) * q` with q in -4..3 is Q6_K's `d * sc' * (q' - 32)` with
//!   the int8 scale sc' = sc - 32 and the 6-bit level q' = q + 32. Exact.
//! - BF16 (safetensors checkpoints, BF16 GGUFs) as F16: a value in f16's normal range keeps
//!   every bit (BF16 has 8 mantissa bits, f16 11), one below it moves by at most 2^-25, and a
//!   finite value beyond f16's 65504 is refused rather than made infinite.
//!
//! Every rewrite keeps rows and blocks in place, so a run of whole rows rewrites alone.

use cortiq_core::Codec;
use std::borrow::Cow;

/// The codec the planar layouts (`gpu/planar.rs`) hold `codec`'s matrices in: Q8_0 for Q5_0,
/// IQ4_NL and IQ4_XS, Q6_K for Q3_K, F16 for BF16, `codec` itself for the rest.
pub fn planar_codec(codec: Codec) -> Codec {
    match codec {
        Codec::Q5_0 | Codec::IQ4NL | Codec::IQ4XS => Codec::Q8_0,
        Codec::Q3K => Codec::Q6K,
        Codec::BF16 => Codec::F16,
        other => other,
    }
}

/// Whether the planar layouts hold a `codec` matrix with rows of `cols` values: whole blocks
/// of `codec`, in a width `planar_codec(codec)`'s layout takes.
pub fn planar_supports(codec: Codec, cols: usize) -> bool {
    cols.is_multiple_of(codec.block_len()) && crate::gpu::planar::supports(planar_codec(codec), cols)
}

/// `bytes` (whole rows of `cols` values in `codec`) in `planar_codec(codec)`'s block layout,
/// borrowed where that is `codec`'s own; Err says what the rewrite cannot hold.
pub fn planar_bytes(codec: Codec, cols: usize, bytes: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    match codec {
        Codec::Q5_0 | Codec::IQ4NL | Codec::IQ4XS => as_q8_0(codec, cols, bytes).map(Cow::Owned),
        Codec::Q3K => Ok(Cow::Owned(q3_k_as_q6_k(bytes))),
        Codec::BF16 => bf16_as_f16(bytes).map(Cow::Owned).ok_or_else(|| "a BF16 value beyond f16's range".to_string()),
        _ => Ok(Cow::Borrowed(bytes)),
    }
}

/// `bytes` (whole rows of `cols` values) of Q5_0, IQ4_NL, IQ4_XS or q8_row as Q8_0 blocks;
/// Err names a scale f16 cannot hold, or a codec with no such rewrite.
pub fn as_q8_0(codec: Codec, cols: usize, bytes: &[u8]) -> Result<Vec<u8>, String> {
    match codec {
        Codec::Q5_0 => Ok(q5_0_as_q8_0(bytes)),
        Codec::IQ4NL => Ok(iq4_nl_as_q8_0(bytes)),
        Codec::IQ4XS => iq4_xs_as_q8_0(bytes).ok_or_else(|| "a block scale beyond f16".to_string()),
        Codec::Q8Row => q8_row_as_q8_0(cols, bytes).ok_or_else(|| "a row scale outside f16's normal range".to_string()),
        other => Err(format!("no Q8_0 form for {other}")),
    }
}

/// Q5_0 blocks (22 bytes a 32 values: f16 d, 32 high bits, byte j = low nibbles of values j
/// and j + 16) as Q8_0 blocks (34 bytes: f16 d, 32 int8 levels minus 16).
fn q5_0_as_q8_0(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() / 22 * 34);
    for blk in bytes.chunks_exact(22) {
        let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
        let level = |v: usize| -> u8 {
            let nibble = if v < 16 { blk[6 + v] & 15 } else { blk[6 + v - 16] >> 4 };
            ((nibble | (((qh >> v) & 1) as u8) << 4) as i8 - 16) as u8
        };
        out.extend_from_slice(&blk[0..2]);
        out.extend((0..32).map(level));
    }
    out
}

/// IQ4_NL blocks (18 bytes a 32 values: f16 d, byte j = the level indices of values j and
/// j + 16) as Q8_0 blocks (34 bytes: f16 d, the 32 levels as int8).
fn iq4_nl_as_q8_0(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() / 18 * 34);
    for blk in bytes.chunks_exact(18) {
        out.extend_from_slice(&blk[0..2]);
        out.extend(iq4_levels(&blk[2..18]));
    }
    out
}

/// The 32 levels of 16 IQ4 nibble bytes (value l in byte l's low nibble, l + 16 in its high
/// one) as int8 bytes.
fn iq4_levels(qs: &[u8]) -> impl Iterator<Item = u8> + '_ {
    (0..32).map(|v| cortiq_core::codec::IQ4_LEVELS[(if v < 16 { qs[v] & 15 } else { qs[v - 16] >> 4 }) as usize] as u8)
}

/// IQ4_XS superblocks (136 bytes: f16 d, 6-bit scales, 8 blocks of 16 nibble bytes) as 8
/// Q8_0 blocks each, block k's scale `d * scale_k` rounded to f16; None where one is not
/// finite in f16.
fn iq4_xs_as_q8_0(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() / 136 * 8 * 34);
    for sb in bytes.chunks_exact(136) {
        let d = half::f16::from_le_bytes([sb[0], sb[1]]).to_f32();
        for k in 0..8 {
            let scale = half::f16::from_f32(d * cortiq_core::codec::iq4_xs_scale(sb, k) as f32);
            if !scale.is_finite() {
                return None;
            }
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend(iq4_levels(&sb[8 + 16 * k..24 + 16 * k]));
        }
    }
    Some(out)
}

/// q8_row rows (f32 scale, `cols` int8 values) as `cols / 32` Q8_0 blocks each, every block's
/// d the row's scale rounded to f16; None where a scale is not zero nor a normal f16.
fn q8_row_as_q8_0(cols: usize, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() / (4 + cols) * cols / 32 * 34);
    for row in bytes.chunks_exact(4 + cols) {
        let scale = f32::from_le_bytes([row[0], row[1], row[2], row[3]]);
        let d = half::f16::from_f32(scale);
        if scale != 0.0 && !d.is_normal() {
            return None;
        }
        for block in row[4..].chunks_exact(32) {
            out.extend_from_slice(&d.to_le_bytes());
            out.extend_from_slice(block);
        }
    }
    Some(out)
}

/// BF16 values as F16 ones, rounded to nearest (exact in f16's normal range); None where a
/// finite value is beyond f16's largest, 65504.
fn bf16_as_f16(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    for b in bytes.chunks_exact(2) {
        let v = half::bf16::from_le_bytes([b[0], b[1]]).to_f32();
        if v.is_finite() && v.abs() > 65504.0 {
            return None;
        }
        out.extend_from_slice(&half::f16::from_f32(v).to_le_bytes());
    }
    Some(out)
}

/// Q3_K superblocks (110 bytes: hmask, 2-bit levels, 12 bytes of scales, f16 d) as Q6_K's
/// (210 bytes: low nibbles, high pairs, int8 scales, f16 d); value 128n + 32k + l is level
/// bits 2k.. of byte 32n + l in both, and sub-block s's scale Q6_K's scale s.
fn q3_k_as_q6_k(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; bytes.len() / 110 * 210];
    for (sb, o) in bytes.chunks_exact(110).zip(out.chunks_exact_mut(210)) {
        for v in 0..256 {
            let (n, k, l) = (v / 128, (v % 128) / 32, v % 32);
            let less = if (sb[l] >> (v / 32)) & 1 == 1 { 0 } else { 4 };
            let q = ((sb[32 + 32 * n + l] >> (2 * k)) & 3) + 32 - less;
            o[64 * n + 32 * (k & 1) + l] |= (q & 15) << (4 * (k >> 1));
            o[128 + 32 * n + l] |= (q >> 4) << (2 * k);
        }
        for (s, stored) in cortiq_core::codec::q3_k_stored_scales(&sb[96..108]).into_iter().enumerate() {
            o[192 + s] = (stored as i8 - 32) as u8;
        }
        o[208..210].copy_from_slice(&sb[108..110]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    /// Each rewrite decodes (by its target codec's own decoder) to the source codec's values:
    /// exactly (up to the f32 product's last bit), or for the f16-rounded scales within half an
    /// f16 step of each value.
    #[test]
    fn rewritten_rows_decode_as_the_source_codec() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for codec in [Codec::Q5_0, Codec::IQ4NL, Codec::IQ4XS, Codec::Q3K, Codec::Q8Row, Codec::BF16] {
            let target = if codec == Codec::Q8Row { Codec::Q8_0 } else { planar_codec(codec) };
            assert_ne!(target, codec);
            for (rows, cols) in [(1, 256), (3, 512), (2, 768)] {
                let data = rng.normals(rows * cols, 0.7);
                let bytes: Vec<u8> = data.chunks(cols).flat_map(|r| codec.pack_row(r).unwrap()).collect();
                let out = if codec == Codec::Q8Row { Cow::Owned(as_q8_0(codec, cols, &bytes).unwrap()) } else { planar_bytes(codec, cols, &bytes).unwrap() };
                assert_eq!(out.len() as u64, target.tensor_bytes(rows as u64, cols as u64).unwrap(), "{codec}");
                let rel = if matches!(codec, Codec::IQ4XS | Codec::Q8Row) { 2f32.powi(-11) } else { 2f32.powi(-23) };
                // BF16 below f16's normal range: half an f16 subnormal step.
                let abs = if codec == Codec::BF16 { 2f32.powi(-25) } else { 0.0 };
                let (src_row, out_row) = (bytes.len() / rows, out.len() / rows);
                for r in 0..rows {
                    let (mut want, mut got) = (vec![0f32; cols], vec![0f32; cols]);
                    codec.unpack_row(&bytes[r * src_row..(r + 1) * src_row], &mut want).unwrap();
                    target.unpack_row(&out[r * out_row..(r + 1) * out_row], &mut got).unwrap();
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!((g - w).abs() <= rel * w.abs() + abs, "{codec} {rows}x{cols} row {r} value {i}: {g} vs {w}, seed {seed}");
                    }
                }
            }
        }
    }

    /// The codecs the planar layouts read stay as they are, borrowed; the rest have no rewrite.
    #[test]
    fn kept_codecs_are_borrowed_widths_checked_and_unknown_rewrites_refused() {
        let bytes = [0u8; 18];
        for codec in [Codec::Q4_0, Codec::Q8_0, Codec::Q6K, Codec::Q5K, Codec::Q8Row] {
            assert_eq!(planar_codec(codec), codec);
            assert!(matches!(planar_bytes(codec, 32, &bytes), Ok(Cow::Borrowed(_))));
        }
        assert!(as_q8_0(Codec::Q2K, 256, &[0u8; 84]).unwrap_err().contains("no Q8_0 form"));
        // Widths: whole blocks of the file's codec and a width the held codec's layout takes.
        assert!(planar_supports(Codec::Q3K, 512) && !planar_supports(Codec::Q3K, 288) && planar_supports(Codec::Q5_0, 96));
        assert!(planar_supports(Codec::IQ4XS, 256) && !planar_supports(Codec::IQ4XS, 288) && !planar_supports(Codec::Q2K, 256));
        let mut huge = [0u8; 136];
        huge[..2].copy_from_slice(&half::f16::MAX.to_le_bytes());
        assert!(planar_bytes(Codec::IQ4XS, 256, &huge).unwrap_err().contains("beyond f16"));
        // BF16: f16's largest value and infinities pass as they are, a finite value past it
        // is refused; below the normal range values round to f16's subnormal steps.
        let bf = |vs: &[f32]| vs.iter().flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect::<Vec<u8>>();
        let f16s = |b: &[u8]| b.chunks_exact(2).map(|h| half::f16::from_le_bytes([h[0], h[1]]).to_f32()).collect::<Vec<f32>>();
        let kept = [65280.0, -f32::INFINITY, 0.0, 1.5, -2f32.powi(-14)];
        assert_eq!(f16s(&bf16_as_f16(&bf(&kept)).unwrap()), kept);
        assert_eq!(f16s(&bf16_as_f16(&bf(&[3.0 * 2f32.powi(-26)])).unwrap()), [2f32.powi(-24)]);
        assert!(planar_bytes(Codec::BF16, 8, &bf(&[1.0, 65536.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])).unwrap_err().contains("beyond f16"));
        assert!(planar_supports(Codec::BF16, 8) && !planar_supports(Codec::BF16, 12));
    }
}
