//! The weight layouts the CUDA kernels read, per codec: what `ensure_layout` uploads. Q4_0,
//! Q4_1, Q8_0, F16 and F32 are `gpu/planar.rs`'s planar layout as it is. The K-quants of
//! llama.cpp's Q4_K_M files are transcoded on upload to a kind the kernels decode, exactly:
//! - Q4_K as kind 6 (`KIND_Q4K`): per 32-value unit its levels as Q4_0's payload word, and
//!   per 256-value superblock a 5-word record: `f16 d | f16 dmin << 16`, then one word per
//!   two units holding each unit's 6-bit scale and minimum as bytes (`sc | m << 8`, the odd
//!   unit in the high half). 4.625 bits a weight instead of 4.5; `unit_dot` in matvec.cu
//!   computes `d * sc * dx * dot - dmin * m * sum(x)`.
//! - Q5_K as kind 7 (`KIND_Q5K`): kind 6's payload words (the levels' low nibbles) and
//!   superblock records, then from word `high_off(a)` one word a unit of its levels' fifth
//!   bits (value 4k + b's at bit 8b + k, so a shift and a mask give `dp4a` the bytes of x's
//!   component k). 5.625 bits a weight instead of 5.5; `unit_dot` adds 16 times the high bits'
//!   dot product to the nibbles'.
//! - Q6_K as kind 5 (`KIND_Q6`): per 32-value unit the low nibbles of its levels as
//!   Q4_0's payload word, and a 3-word record: the high 2 bits of values 0-15, of values 16-31
//!   (value 4k + b's at bits 8b + 2k, so a shift and a mask give `dp4a` the bytes of x's
//!   component k), and `f16 d | sc0 << 16 | sc1 << 24` (the superblock's d and the int8
//!   scales of the unit's two 16-value halves). 7 bits a weight instead of 6.5625; `unit_dot`
//!   keeps the halves' integer dot products apart.
//! - Q5_1 as kind 8 (`KIND_Q51`): Q4_1's planar layout of its levels' low nibbles and its
//!   `f16 d | f16 m << 16` scale words, then from word `q51_high_off(a)` (planar.rs's region
//!   c) one word a unit of its levels' fifth bits in kind 7's order. 6 bits a weight, as the
//!   file's; `unit_dot` adds 16 times the high bits' dot product to the nibbles', as kind 7.
//! - Q5_0, IQ4_NL, IQ4_XS and q8_row as Q8_0 (kind 2), Q3_K as Q6_K and then kind 5, by
//!   `gpu/transcode.rs` (IQ4_XS's and q8_row's scales rounded to f16, the rest exact): 8.5
//!   bits a weight instead of 5.5, 4.5, 4.25 and ~8; 7 instead of 3.4375.
//! - BF16 as F16 (kind 3), by `gpu/transcode.rs`: exact in f16's normal range, a finite value
//!   beyond it refused.

use super::super::planar::{self, f16_at, nibble_words, q6k_levels, Planar};
use super::super::transcode;
use cortiq_core::Codec;
use std::borrow::Cow;

/// The kernels' codec kinds of Q6_K's, Q4_K's and Q5_K's layouts (matvec.cu's `KIND_Q6`,
/// `KIND_Q4K`, `KIND_Q5K`).
pub(super) const KIND_Q6: i32 = 5;
pub(super) const KIND_Q4K: i32 = 6;
pub(super) const KIND_Q5K: i32 = 7;
/// The kernels' codec kind of Q5_1's layout (matvec.cu's `KIND_Q51`).
pub(super) const KIND_Q51: i32 = 8;

/// Where kind 7's high-bit words start (u32 words) in a matrix whose records start at word
/// `a` (4 payload words a unit, so `a / 4` units, then 5 record words a superblock of 8 units,
/// padded to a whole 16-byte word): matvec.cu's `q5k_high_off`.
pub(super) fn high_off(a: usize) -> usize {
    a + (5 * (a / 32)).next_multiple_of(4)
}

/// Where kind 8's high-bit words start (u32 words) in a matrix whose scale words start at
/// word `a` (4 payload words a unit, so `a / 4` units, a scale word each, padded to a whole
/// 16-byte word): matvec.cu's `q51_high_off`, planar.rs's region c of Q5_1.
pub(super) fn q51_high_off(a: usize) -> usize {
    a + (a / 4).next_multiple_of(4)
}

/// A unit's fifth bits (bit v: value v's) in the order `dot_high1` reads them: value 4k + b's
/// at bit 8b + k, so a shift by k and a mask give `dp4a` the bytes of x's component k.
fn dp4a_bit_order(natural: u32) -> u32 {
    (0..32).fold(0, |h, v| h | (natural >> v & 1) << (8 * (v % 4) + v / 4))
}

/// The kernels' codec kind for a weight codec, if they decode it: 0 Q4_0 (and q4_tiled),
/// 1 Q4_1, 2 Q8_0 (and Q5_0, IQ4_NL, IQ4_XS, q8_row, transcoded), 3 F16 (and BF16), 4 F32, 5 Q6_K (and Q3_K), 6 Q4_K,
/// 7 Q5_K, 8 Q5_1.
pub(super) fn kind(codec: Codec) -> Option<i32> {
    Some(match codec {
        Codec::Q4_0 | Codec::Q4Tiled => 0,
        Codec::Q4_1 => 1,
        Codec::Q8_0 | Codec::Q5_0 | Codec::IQ4NL | Codec::IQ4XS | Codec::Q8Row => 2,
        Codec::F16 | Codec::BF16 => 3,
        Codec::F32 => 4,
        Codec::Q6K | Codec::Q3K => KIND_Q6,
        Codec::Q4K => KIND_Q4K,
        Codec::Q5K => KIND_Q5K,
        Codec::Q5_1 => KIND_Q51,
        _ => return None,
    })
}

/// Whether kind `kind`'s rows are dotted with int8 activations (staged as `stage_x`'s int8
/// groups) rather than floats.
pub(super) fn int8_kind(kind: i32) -> bool {
    kind <= 2 || kind == KIND_Q6 || kind == KIND_Q4K || kind == KIND_Q5K || kind == KIND_Q51
}

/// Whether `dequant_f16` (graph.cu) decodes kind `kind` to f16 for the prompt's cuBLAS GEMMs:
/// the int8-dotted kinds and F16 (copied), not F32.
pub(super) fn f16_decodable(kind: i32) -> bool {
    int8_kind(kind) || kind == 3
}

/// Whether the kernels take a `codec` matrix with rows of `cols` values: a kind, whole
/// 32-value units, and a width the planar layouts hold (`transcode::planar_supports`: K-quants
/// and IQ4_XS whole 256-value superblocks).
pub(super) fn supports(codec: Codec, cols: usize) -> bool {
    kind(codec).is_some() && cols.is_multiple_of(32) && transcode::planar_supports(codec, cols)
}

/// `bytes` (`rows` x `cols` of `codec`, the file's layout) as the device holds them: the
/// planar layout of `kind(codec)`, row-major or, where `unit_major` (kinds 0 to 2),
/// unit-major (`planar::repack_unit_major`). Err names what does not fit.
pub(super) fn device_layout(codec: Codec, rows: usize, cols: usize, bytes: &[u8], unit_major: bool) -> Result<Planar, String> {
    let what = || format!("{codec} {rows}x{cols}");
    if codec.tensor_bytes(rows as u64, cols as u64) != Some(bytes.len() as u64) || !supports(codec, cols) {
        return Err(format!("{}: no planar layout for this shape", what()));
    }
    // The rewrite both backends share (`transcode::planar_bytes`: Q5_0, IQ4_NL, IQ4_XS as Q8_0,
    // Q3_K as Q6_K, BF16 as F16), and q8_row as Q8_0 (wgpu reads q8_row itself).
    let (codec, bytes) = match codec {
        Codec::Q8Row => (Codec::Q8_0, Cow::Owned(transcode::as_q8_0(codec, cols, bytes).map_err(|e| format!("{}: {e}", what()))?)),
        _ => (transcode::planar_codec(codec), transcode::planar_bytes(codec, cols, bytes).map_err(|e| format!("{}: {e}", what()))?),
    };
    match codec {
        Codec::Q6K | Codec::Q4K | Codec::Q5K | Codec::Q5_1 if unit_major => return Err(format!("{}: no unit-major layout", what())),
        Codec::Q6K => return Ok(q6k_units(rows, cols, &bytes)),
        Codec::Q4K => return Ok(affine_k_units(cols, &bytes, AffineK::Q4K)),
        Codec::Q5K => return Ok(affine_k_units(cols, &bytes, AffineK::Q5K)),
        Codec::Q5_1 => return q5_1_units(rows, cols, &bytes).ok_or_else(|| format!("{}: no planar layout", what())),
        _ => {}
    }
    let p = if unit_major { planar::repack_unit_major(codec, rows, cols, &bytes) } else { planar::repack(codec, rows, cols, &bytes) };
    p.ok_or_else(|| format!("{}: no planar layout", what()))
}

/// The K-quants whose values are `d * sc * level - dmin * m` per 32-value unit: Q4_K (4-bit
/// levels) and Q5_K (5-bit: a bit a value more, in 32 bytes before the nibbles).
#[derive(Clone, Copy, PartialEq)]
enum AffineK {
    Q4K,
    Q5K,
}

impl AffineK {
    /// Bytes a 256-value superblock: f16 d, f16 dmin, 12 bytes of 6-bit scales and minimums,
    /// (Q5_K) 32 bytes of high bits, 128 of nibbles.
    fn block_bytes(self) -> usize {
        if self == AffineK::Q5K { 176 } else { 144 }
    }
}

/// Q4_K or Q5_K rows in kind 6's or 7's layout: per unit 4 payload words of its levels' low
/// nibbles (Q4_0's order), then from word `a` a 5-word record a superblock, and for Q5_K from
/// word `high_off(a)` a word a unit of its levels' fifth bits.
fn affine_k_units(cols: usize, bytes: &[u8], k: AffineK) -> Planar {
    let superblocks = bytes.len() / k.block_bytes();
    let mut words = Vec::with_capacity(superblocks * 32);
    let mut records = Vec::with_capacity(superblocks * 5);
    let mut high = Vec::with_capacity(superblocks * 8);
    for sb in bytes.chunks_exact(k.block_bytes()) {
        let scales = &sb[4..16];
        let (qh, qs) = if k == AffineK::Q5K { (&sb[16..48], &sb[48..176]) } else { (&sb[0..0], &sb[16..144]) };
        records.push(u32::from_le_bytes([sb[0], sb[1], sb[2], sb[3]]));
        let mut pair = 0u32;
        for j in 0..8 {
            let chunk = &qs[32 * (j / 2)..32 * (j / 2) + 32];
            let levels: Vec<u8> = chunk.iter().map(|b| if j % 2 == 0 { b & 15 } else { b >> 4 }).collect();
            words.extend(nibble_words(&levels));
            if k == AffineK::Q5K {
                high.push(dp4a_bit_order(planar::q5_k_high_word(qh, j)));
            }
            let (sc, m) = cortiq_core::codec::k4_scale_min(j, scales);
            pair |= (sc as u32 | (m as u32) << 8) << (16 * (j % 2));
            if j % 2 == 1 {
                records.push(pair);
                pair = 0;
            }
        }
    }
    if k == AffineK::Q5K {
        records.resize(high_off(words.len()) - words.len(), 0);
        records.extend(high);
    }
    with_records(words, &records, cols)
}

/// Q5_1 rows in kind 8's layout: planar.rs's (Q4_1's payload and scale words, region c the
/// fifth bits a word a unit) with each high-bit word in `dot_high1`'s order.
fn q5_1_units(rows: usize, cols: usize, bytes: &[u8]) -> Option<Planar> {
    let mut p = planar::repack(Codec::Q5_1, rows, cols, bytes)?;
    let (c, units) = (p.c as usize, rows * cols / 32);
    if c != q51_high_off(p.a as usize) {
        return None;
    }
    for h in &mut p.words[c..c + units] {
        *h = dp4a_bit_order(*h);
    }
    Some(p)
}

/// A transcoded layout: the payload `words` (4 a unit), then from word `a` the `records`
/// (padded to whole 16-byte words).
fn with_records(mut words: Vec<u32>, records: &[u32], cols: usize) -> Planar {
    let a = words.len() as u32;
    words.extend_from_slice(records);
    words.resize(words.len().next_multiple_of(4).max(4), 0);
    let end = words.len() as u32;
    Planar { words, units_per_row: (cols / 32) as u32, a, b: end, c: end }
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
            words.extend(nibble_words(unit));
            for half in unit.chunks_exact(16) {
                records.push(half.iter().enumerate().fold(0u32, |h, (v, l)| h | ((l >> 4) as u32 & 3) << (8 * (v % 4) + 2 * (v / 4))));
            }
            records.push(d | (sb[192 + 2 * j] as u32) << 16 | (sb[193 + 2 * j] as u32) << 24);
        }
    }
    with_records(words, &records, cols)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;
    use half::f16;

    /// Row `r`'s values as the kernels decode the device layout (`unit_dot` with one-hot x):
    /// kind 2 as planar Q8_0 and kind 3 as planar F16 (`planar::tests::decode_unit`), kind 5
    /// `d * sc * (nibble + 16 high - 32)`, kind 6 `d * sc * nibble - dmin * m`, kind 7 as 6 with
    /// the level's fifth bit (`16 high`) added to the nibble, kind 8 `d * (nibble + 16 high) + m`.
    fn decode_row(kind: i32, p: &Planar, r: usize) -> Vec<f32> {
        let (w, units) = (&p.words, p.units_per_row as usize);
        let half = |bits: u32| f16::from_bits(bits as u16).to_f32();
        // Value v's nibble in unit n's payload words (Q4_0's order).
        let nibble = |n: usize, v: usize| (w[4 * n + (v % 16) / 4] >> (8 * (v % 4) + 4 * (v / 16))) & 15;
        (0..units)
            .flat_map(|u| match kind {
                2 => planar::tests::decode_unit(Codec::Q8_0, p, r, u),
                3 => planar::tests::decode_unit(Codec::F16, p, r, u),
                KIND_Q51 => {
                    let n = r * units + u;
                    let s = w[p.a as usize + n];
                    let high = |v: usize| (w[q51_high_off(p.a as usize) + n] >> (8 * (v % 4) + v / 4)) & 1;
                    (0..32).map(|v| half(s & 0xffff) * (nibble(n, v) | high(v) << 4) as f32 + half(s >> 16)).collect()
                }
                KIND_Q4K | KIND_Q5K => {
                    let n = r * units + u;
                    let record = &w[p.a as usize + 5 * (n / 8)..];
                    let pair = record[1 + (n % 8) / 2] >> (16 * (n % 2));
                    let (d, dmin) = (half(record[0] & 0xffff), half(record[0] >> 16));
                    let (sc, m) = ((pair & 0xff) as f32, ((pair >> 8) & 0xff) as f32);
                    let high = |v: usize| if kind == KIND_Q5K { (w[high_off(p.a as usize) + n] >> (8 * (v % 4) + v / 4)) & 1 } else { 0 };
                    (0..32).map(|v| d * sc * (nibble(n, v) | high(v) << 4) as f32 - dmin * m).collect()
                }
                _ => {
                    let n = r * units + u;
                    let s = w[p.a as usize + 3 * n + 2];
                    (0..32)
                        .map(|v| {
                            let v16 = v % 16;
                            let high = (w[p.a as usize + 3 * n + v / 16] >> (8 * (v16 % 4) + 2 * (v16 / 4))) & 3;
                            let sc = (s >> (16 + 8 * (v / 16))) as u8 as i8 as f32;
                            half(s & 0xffff) * sc * ((nibble(n, v) | high << 4) as f32 - 32.0)
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
        for (codec, kind_want) in [(Codec::Q4K, KIND_Q4K), (Codec::Q5K, KIND_Q5K), (Codec::Q6K, KIND_Q6), (Codec::Q5_0, 2), (Codec::IQ4NL, 2), (Codec::Q3K, KIND_Q6), (Codec::IQ4XS, 2), (Codec::Q8Row, 2), (Codec::Q5_1, KIND_Q51), (Codec::BF16, 3)] {
            assert_eq!(kind(codec), Some(kind_want));
            for (rows, cols) in [(1, 256), (3, 512), (5, 768), (2, 576)] {
                if !supports(codec, cols) {
                    assert!(cols % 256 != 0 && !matches!(codec, Codec::Q5_0 | Codec::IQ4NL | Codec::Q8Row | Codec::Q5_1 | Codec::BF16), "{codec} {cols}");
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
                    // IQ4_XS's block scales and q8_row's row scales are rounded to f16: half
                    // an f16 step of each value.
                    let rel = if matches!(codec, Codec::IQ4XS | Codec::Q8Row) { 2f32.powi(-11) } else { 1e-6 };
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!((g - w).abs() <= rel * w.abs() + 1e-6, "{codec} {rows}x{cols} row {r} value {i}: {g} vs {w}, seed {seed}");
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_k_quants_and_their_unit_major_layouts_are_refused_by_name() {
        assert!(device_layout(Codec::Q4K, 2, 256, &[0u8; 144], false).unwrap_err().contains("2x256"));
        assert!(device_layout(Codec::Q6K, 1, 32 * 3, &[0u8; 63], false).is_err());
        assert!(kind(Codec::BF16) == Some(3) && !supports(Codec::Q5_0, 48) && !supports(Codec::Q5K, 288));
        assert!(device_layout(Codec::Q5K, 1, 256, &[0u8; 175], false).unwrap_err().contains("1x256"));
        assert!(device_layout(Codec::Q5K, 1, 256, &[0u8; 176], true).unwrap_err().contains("unit-major"));
        assert!(device_layout(Codec::Q6K, 1, 256, &[0u8; 210], true).unwrap_err().contains("unit-major"));
        assert!(device_layout(Codec::Q3K, 1, 256, &[0u8; 110], true).unwrap_err().contains("unit-major"));
        assert!(kind(Codec::Q2K).is_none() && !supports(Codec::Q3K, 288) && !supports(Codec::IQ4XS, 288));
        // An IQ4_XS block scale past f16's range (d = 65504, scale -32) is refused by name.
        let mut huge = [0u8; 136];
        huge[..2].copy_from_slice(&half::f16::MAX.to_le_bytes());
        assert!(device_layout(Codec::IQ4XS, 1, 256, &huge, false).unwrap_err().contains("beyond f16"));
        // A q8_row scale below f16's normal range would lose more than 2^-11 a value: refused;
        // an all-zero row (scale 0) is not.
        let mut tiny = vec![0u8; 2 * (4 + 64)];
        assert!(device_layout(Codec::Q8Row, 2, 64, &tiny, false).is_ok());
        tiny[68..72].copy_from_slice(&1e-6f32.to_le_bytes());
        assert!(device_layout(Codec::Q8Row, 2, 64, &tiny, false).unwrap_err().contains("f16's normal range"));
        assert!(device_layout(Codec::Q4K, 1, 256, &[0u8; 144], true).unwrap_err().contains("unit-major"));
        assert!(device_layout(Codec::Q5_1, 1, 32, &[0u8; 24], true).unwrap_err().contains("unit-major"));
        assert!(device_layout(Codec::Q5_1, 1, 64, &[0u8; 47], false).unwrap_err().contains("1x64"));
        let past_f16: Vec<u8> = [1.0f32, 70000.0].iter().cycle().take(32).flat_map(|&v| half::bf16::from_f32(v).to_le_bytes()).collect();
        assert!(device_layout(Codec::BF16, 1, 32, &past_f16, false).unwrap_err().contains("beyond f16"));
    }
}
