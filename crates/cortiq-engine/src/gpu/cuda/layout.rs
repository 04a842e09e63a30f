//! The weight layouts the CUDA kernels read, per codec: what `ensure_layout` uploads. Q4_0,
//! Q4_1, Q8_0, F16 and F32 are `gpu/planar.rs`'s planar layout as it is. The K-quants of
//! llama.cpp's Q4_K_M files are transcoded on upload to a kind the kernels decode:
//! - Q4_K as Q4_1 (kind 1). A 32-value sub-block is `d * sc * q - dmin * m` (q in 0..15),
//!   Q4_1's `d' * q + m'` with `d' = d * sc` and `m' = -(dmin * m)` rounded to f16: a
//!   relative error of at most 2^-11 a scale, against the int8 activations' ~2^-8. 5 bits a
//!   weight on the device instead of 4.5; a product beyond f16's range is refused.
//! - Q6_K as kind 5 (`KIND_Q6`), exactly: per 32-value unit the low nibbles of its levels as
//!   Q4_0's payload word, and a 3-word record: the high 2 bits of values 0-15, of values 16-31
//!   (value 4k + b's at bits 8b + 2k, so a shift and a mask give `dp4a` the bytes of x's
//!   component k), and `f16 d | sc0 << 16 | sc1 << 24` (the superblock's d and the int8
//!   scales of the unit's two 16-value halves). 7 bits a weight instead of 6.5625; `unit_dot`
//!   in matvec.cu keeps the halves' integer dot products apart.
//! - Q5_0 (Q4_K_M's fallback for rows that are not whole superblocks, e.g. smollm2's 576) as
//!   Q8_0 (kind 2), exactly: `d * (q - 16)` is Q8_0's `d * q'` with q' = q - 16 in -16..15.
//!   8.5 bits a weight instead of 5.5.

use super::super::planar::{self, f16_at, nibble_words, q6k_levels, scale_min, Planar};
use cortiq_core::Codec;
use half::f16;

/// The kernels' codec kind of Q6_K's layout (matvec.cu's `KIND_Q6`).
pub(super) const KIND_Q6: i32 = 5;

/// The kernels' codec kind for a weight codec, if they decode it: 0 Q4_0 (and q4_tiled),
/// 1 Q4_1 (and Q4_K, transcoded), 2 Q8_0 (and Q5_0, transcoded), 3 F16, 4 F32, 5 Q6_K.
pub(super) fn kind(codec: Codec) -> Option<i32> {
    Some(match codec {
        Codec::Q4_0 | Codec::Q4Tiled => 0,
        Codec::Q4_1 | Codec::Q4K => 1,
        Codec::Q8_0 | Codec::Q5_0 => 2,
        Codec::F16 => 3,
        Codec::F32 => 4,
        Codec::Q6K => KIND_Q6,
        _ => return None,
    })
}

/// Whether kind `kind`'s rows are dotted with int8 activations (staged as `stage_x`'s int8
/// groups) rather than floats.
pub(super) fn int8_kind(kind: i32) -> bool {
    kind <= 2 || kind == KIND_Q6
}

/// Whether the kernels take a `codec` matrix with rows of `cols` values: a kind, and a
/// width its layout holds (whole 32-value units; K-quants whole 256-value superblocks).
pub(super) fn supports(codec: Codec, cols: usize) -> bool {
    kind(codec).is_some() && cols > 0 && cols.is_multiple_of(32) && (codec == Codec::Q5_0 || planar::supports(codec, cols))
}

/// `bytes` (`rows` x `cols` of `codec`, the file's layout) as the device holds them: the
/// planar layout of `kind(codec)`, row-major or, where `unit_major` (Q4_0, Q4_1, Q8_0, Q4_K,
/// Q5_0), unit-major (`planar::repack_unit_major`). Err names what does not fit.
pub(super) fn device_layout(codec: Codec, rows: usize, cols: usize, bytes: &[u8], unit_major: bool) -> Result<Planar, String> {
    let what = || format!("{codec} {rows}x{cols}");
    if codec.tensor_bytes(rows as u64, cols as u64) != Some(bytes.len() as u64) || !supports(codec, cols) {
        return Err(format!("{}: no planar layout for this shape", what()));
    }
    let transcoded;
    let (codec, bytes) = match codec {
        Codec::Q4K => {
            transcoded = q4k_as_q4_1(bytes).ok_or_else(|| format!("{}: a Q4_K scale product is beyond f16's range", what()))?;
            (Codec::Q4_1, &transcoded[..])
        }
        Codec::Q5_0 => {
            transcoded = q5_0_as_q8_0(bytes);
            (Codec::Q8_0, &transcoded[..])
        }
        Codec::Q6K if unit_major => return Err(format!("{}: no unit-major layout", what())),
        Codec::Q6K => return Ok(q6k_units(rows, cols, bytes)),
        _ => (codec, bytes),
    };
    let p = if unit_major { planar::repack_unit_major(codec, rows, cols, bytes) } else { planar::repack(codec, rows, cols, bytes) };
    p.ok_or_else(|| format!("{}: no planar layout", what()))
}

/// Q4_K superblocks (144 bytes a 256 values) as GGUF Q4_1 blocks (20 bytes a 32 values: f16
/// d', f16 m', byte i = level i | level i + 16 << 4), or None where a scale product
/// overflows f16.
fn q4k_as_q4_1(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() / 144 * 160);
    for sb in bytes.chunks_exact(144) {
        let (d, dmin) = (f16_at(sb, 0).to_f32(), f16_at(sb, 2).to_f32());
        let (scales, qs) = (&sb[4..16], &sb[16..144]);
        for j in 0..8 {
            let (sc, m) = scale_min(j, scales);
            let (scale, min) = (d * sc as f32, -(dmin * m as f32));
            let (dj, mj) = (f16::from_f32(scale), f16::from_f32(min));
            if (dj.is_infinite() && scale.is_finite()) || (mj.is_infinite() && min.is_finite()) {
                return None;
            }
            out.extend_from_slice(&dj.to_le_bytes());
            out.extend_from_slice(&mj.to_le_bytes());
            let chunk = &qs[32 * (j / 2)..32 * (j / 2) + 32];
            let level = |i: usize| if j % 2 == 0 { chunk[i] & 15 } else { chunk[i] >> 4 };
            out.extend((0..16).map(|i| level(i) | level(i + 16) << 4));
        }
    }
    Some(out)
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

/// Q6_K rows (210 bytes a 256 values) in kind 5's layout: per unit 4 payload words of the
/// levels' low nibbles (Q4_0's order), then from word `a` a 3-word record a unit.
fn q6k_units(rows: usize, cols: usize, bytes: &[u8]) -> Planar {
    let units = rows * cols / 32;
    let mut words = Vec::with_capacity(units * 7 + 8);
    let mut records = Vec::with_capacity(units * 3);
    for sb in bytes.chunks_exact(210) {
        let d = f16_at(sb, 208).to_bits() as u32;
        let levels = q6k_levels(sb);
        for (j, unit) in levels.chunks_exact(32).enumerate() {
            let nibbles: Vec<u8> = unit.iter().map(|l| l & 15).collect();
            words.extend(nibble_words(&nibbles));
            for half in unit.chunks_exact(16) {
                records.push(half.iter().enumerate().fold(0u32, |h, (v, l)| h | ((l >> 4) as u32 & 3) << (8 * (v % 4) + 2 * (v / 4))));
            }
            records.push(d | (sb[192 + 2 * j] as u32) << 16 | (sb[193 + 2 * j] as u32) << 24);
        }
    }
    let a = words.len() as u32;
    words.extend_from_slice(&records);
    words.resize(words.len().next_multiple_of(4).max(4), 0);
    let end = words.len() as u32;
    Planar { words, units_per_row: (cols / 32) as u32, a, b: end, c: end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    /// Row `r`'s values as the kernels decode the device layout (`unit_dot` with one-hot x):
    /// kinds 1 and 2 as planar Q4_1 and Q8_0 (`planar::tests::decode_unit`), kind 5
    /// `d * sc * (nibble + 16 high - 32)`.
    fn decode_row(kind: i32, p: &Planar, r: usize) -> Vec<f32> {
        let (w, units) = (&p.words, p.units_per_row as usize);
        let half = |bits: u32| f16::from_bits(bits as u16).to_f32();
        (0..units)
            .flat_map(|u| match kind {
                1 => planar::tests::decode_unit(Codec::Q4_1, p, r, u),
                2 => planar::tests::decode_unit(Codec::Q8_0, p, r, u),
                _ => {
                    let n = r * units + u;
                    let s = w[p.a as usize + 3 * n + 2];
                    (0..32)
                        .map(|v| {
                            let nibble = (w[4 * n + (v % 16) / 4] >> (8 * (v % 4) + 4 * (v / 16))) & 15;
                            let v16 = v % 16;
                            let high = (w[p.a as usize + 3 * n + v / 16] >> (8 * (v16 % 4) + 2 * (v16 / 4))) & 3;
                            let sc = (s >> (16 + 8 * (v / 16))) as u8 as i8 as f32;
                            half(s & 0xffff) * sc * ((nibble | high << 4) as f32 - 32.0)
                        })
                        .collect()
                }
            })
            .collect()
    }

    #[test]
    fn transcoded_codecs_decode_on_the_device_layout_as_the_codec_does() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for (codec, kind_want) in [(Codec::Q4K, 1), (Codec::Q6K, KIND_Q6), (Codec::Q5_0, 2)] {
            assert_eq!(kind(codec), Some(kind_want));
            for (rows, cols) in [(1, 256), (3, 512), (5, 768), (2, 576)] {
                if !supports(codec, cols) {
                    assert!(cols % 256 != 0 && codec != Codec::Q5_0, "{codec} {cols}");
                    continue;
                }
                let data = rng.normals(rows * cols, 0.7);
                let bytes: Vec<u8> = data.chunks(cols).flat_map(|r| codec.pack_row(r).unwrap()).collect();
                let p = device_layout(codec, rows, cols, &bytes, false).unwrap();
                let row_bytes = bytes.len() / rows;
                for r in 0..rows {
                    let mut want = vec![0f32; cols];
                    codec.unpack_row(&bytes[r * row_bytes..(r + 1) * row_bytes], &mut want).unwrap();
                    let got = decode_row(kind_want, &p, r);
                    // Q4_K's two scale products are rounded to f16 (2^-11 relative each), so
                    // a value may move by that much of its two terms; Q6_K and Q5_0 are exact.
                    let scale = data.iter().fold(0f32, |m, v| m.max(v.abs()));
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        let bound = if codec == Codec::Q4K { 2f32.powi(-10) * 2.0 * scale } else { 1e-6 * (1.0 + w.abs()) };
                        assert!((g - w).abs() <= bound, "{codec} {rows}x{cols} row {r} value {i}: {g} vs {w}, seed {seed}");
                    }
                }
            }
        }
    }

    #[test]
    fn q4_k_takes_the_unit_major_layout_of_its_q4_1_image() {
        let mut rng = SplitMix64::fresh();
        let (rows, cols) = (64, 512);
        let data = rng.normals(rows * cols, 0.5);
        let bytes: Vec<u8> = data.chunks(cols).flat_map(|r| Codec::Q4K.pack_row(r).unwrap()).collect();
        let q41 = q4k_as_q4_1(&bytes).unwrap();
        assert_eq!(device_layout(Codec::Q4K, rows, cols, &bytes, true).unwrap(), planar::repack_unit_major(Codec::Q4_1, rows, cols, &q41).unwrap());
        assert!(device_layout(Codec::Q6K, 1, 256, &[0u8; 210], true).unwrap_err().contains("unit-major"));
    }

    #[test]
    fn malformed_or_unrepresentable_k_quants_are_refused_by_name() {
        assert!(device_layout(Codec::Q4K, 2, 256, &[0u8; 144], false).unwrap_err().contains("2x256"));
        assert!(device_layout(Codec::Q6K, 1, 32 * 3, &[0u8; 63], false).is_err());
        assert!(kind(Codec::Q5K).is_none() && !supports(Codec::Q5_0, 48));
        // d = 65504 (f16's largest) with a sub-block scale of 63: the product overflows f16.
        let mut sb = [0u8; 144];
        sb[0..2].copy_from_slice(&f16::MAX.to_le_bytes());
        sb[4] = 63;
        assert!(device_layout(Codec::Q4K, 1, 256, &sb, false).unwrap_err().contains("beyond f16"));
    }
}
