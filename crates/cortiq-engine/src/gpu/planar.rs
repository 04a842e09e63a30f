//! The device layout of a weight matrix ("planar"): what the wgpu `kernels/matvec.wgsl` and
//! the CUDA `kernels/matvec.cu` read. Rows
//! are cut into *units* of a few values; each unit's quant payload is one or two 16-byte
//! words (so the shader loads `vec4<u32>`), and scales live in separate regions after the
//! payload. GGUF's 18- and 34-byte blocks are not 4-byte aligned, so they cannot be read in
//! place; K-quant superblocks are unpacked into 32-value units with the 6-bit scales
//! decoded to bytes (Q4_K: 148 bytes per 256 values instead of 144; Q6_K: 212 instead of 210).
//!
//! Regions, in u32 words (`a`, `b`, `c` offsets; each codec uses the ones it needs):
//! | codec | unit | payload per unit | a | b | c |
//! | --- | --- | --- | --- | --- | --- |
//! | Q4_0, q4_tiled | 32 | 4 words: byte i = value i (low nibble), value i+16 (high) | f16 d, 2 units/word | - | - |
//! | Q4_1 | 32 | as Q4_0 | (f16 d, f16 m) per unit | - | - |
//! | Q8_0 | 32 | 8 words of int8 | f16 d, 2 units/word | - | - |
//! | q8_row | 16 | 4 words of int8 | f32 scale per row | - | - |
//! | F16 | 8 | 4 words of f16 pairs | - | - | - |
//! | F32 | 4 | 4 words | - | - | - |
//! | Q4_K | 32 | as Q4_0 (unsigned levels) | (f16 d, f16 dmin) per superblock | (u8 s, u8 m) per unit, 2 units/word | - |
//! | Q6_K | 32 | low nibbles as Q4_0 | f32 d per superblock | int8 scale per 16 values, 4/word | 2 words of 2-bit highs per unit |

use cortiq_core::Codec;
use half::f16;

/// A weight in the planar layout: the words to upload and where each region starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Planar {
    pub words: Vec<u32>,
    pub units_per_row: u32,
    /// Region offsets in u32 words (multiples of 4 so a region could be read as vec4).
    pub a: u32,
    pub b: u32,
    pub c: u32,
}

/// Values per unit and payload vec4 words per unit, for the codecs the shader reads.
pub fn unit_shape(codec: Codec) -> Option<(usize, usize)> {
    Some(match codec {
        Codec::Q4_0 | Codec::Q4Tiled | Codec::Q4_1 | Codec::Q5_1 | Codec::Q4K | Codec::Q5K | Codec::Q6K => (32, 1),
        Codec::Q8_0 => (32, 2),
        Codec::Q8Row => (16, 1),
        Codec::F16 => (8, 1),
        Codec::F32 => (4, 1),
        _ => return None,
    })
}

/// Whether the shader can take a `rows x cols` matrix of this codec.
pub fn supports(codec: Codec, cols: usize) -> bool {
    unit_shape(codec).is_some_and(|(u, _)| cols.is_multiple_of(u) && cols > 0) && (!matches!(codec, Codec::Q4K | Codec::Q5K | Codec::Q6K) || cols.is_multiple_of(256))
}

/// Planar bytes per row (for splitting a matrix under the binding-size limit).
pub fn bytes_per_row(codec: Codec, cols: usize) -> usize {
    let (u, w) = unit_shape(codec).unwrap_or((1, 0));
    let units = cols / u;
    let scales = match codec {
        Codec::Q4_0 | Codec::Q4Tiled | Codec::Q8_0 => units * 2,
        Codec::Q4_1 => units * 4,
        Codec::Q5_1 => units * 8,
        Codec::Q8Row => 4,
        Codec::Q4K => units / 8 * 4 + units * 2,
        Codec::Q5K => units / 8 * 4 + units * 2 + units * 4,
        Codec::Q6K => units / 8 * 4 + units * 2 + units * 8,
        _ => 0,
    };
    units * w * 16 + scales
}

fn round4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// The little-endian f16 at byte `i` of `b`.
pub(super) fn f16_at(b: &[u8], i: usize) -> f16 {
    f16::from_le_bytes([b[i], b[i + 1]])
}

/// Sub-block j's fifth bits from a Q5_K superblock's 32 bytes of high bits `qh` (bit j of
/// byte v: value v's) as a word, bit v for value v.
pub(super) fn q5_k_high_word(qh: &[u8], j: usize) -> u32 {
    qh.iter().enumerate().fold(0u32, |h, (v, q)| h | ((q >> j) as u32 & 1) << v)
}

/// Pack 32 levels (0..15) into 4 words: byte i holds level i (low) and level i+16 (high).
pub(super) fn nibble_words(levels: &[u8]) -> [u32; 4] {
    let mut out = [0u32; 4];
    for i in 0..16 {
        let byte = (levels[i] & 15) as u32 | (((levels[i + 16] & 15) as u32) << 4);
        out[i / 4] |= byte << (8 * (i % 4));
    }
    out
}

fn bytes_to_words(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    b.chunks(4).map(|c| {
        let mut w = [0u8; 4];
        w[..c.len()].copy_from_slice(c);
        u32::from_le_bytes(w)
    })
}

/// Builds the regions unit by unit, then concatenates them.
#[derive(Default)]
struct Builder {
    payload: Vec<u32>,
    a: Vec<u32>,
    b: Vec<u32>,
    c: Vec<u32>,
}

impl Builder {
    fn finish(mut self, units_per_row: usize) -> Planar {
        let mut words = std::mem::take(&mut self.payload);
        let place = |region: &[u32], words: &mut Vec<u32>| {
            words.resize(round4(words.len()), 0);
            let at = words.len() as u32;
            words.extend_from_slice(region);
            at
        };
        let a = place(&self.a, &mut words);
        let b = place(&self.b, &mut words);
        let c = place(&self.c, &mut words);
        words.resize(round4(words.len()).max(4), 0);
        Planar { words, units_per_row: units_per_row as u32, a, b, c }
    }
}

/// Pairs of 16-bit halves packed into words, low half first.
fn pack_halves(halves: &[u16]) -> Vec<u32> {
    halves.chunks(2).map(|p| p[0] as u32 | (*p.get(1).unwrap_or(&0) as u32) << 16).collect()
}

/// Repack `rows` rows of a GGUF/cortiq tensor (`bytes`, the codec's own layout) into the
/// planar layout, or `None` for a codec or width the shader does not read.
pub fn repack(codec: Codec, rows: usize, cols: usize, bytes: &[u8]) -> Option<Planar> {
    if !supports(codec, cols) || codec.tensor_bytes(rows as u64, cols as u64)? != bytes.len() as u64 {
        return None;
    }
    let row_bytes = bytes.len() / rows.max(1);
    let (unit, _) = unit_shape(codec)?;
    let units = cols / unit;
    let mut bld = Builder::default();
    let mut halves_a: Vec<u16> = Vec::new();
    let mut halves_b: Vec<u16> = Vec::new();
    for row in bytes.chunks_exact(row_bytes.max(1)).take(rows) {
        match codec {
            Codec::Q4_0 | Codec::Q4Tiled | Codec::Q8_0 | Codec::Q4_1 | Codec::Q5_1 => {
                let bb = row_bytes / units;
                for blk in row.chunks_exact(bb) {
                    match codec {
                        Codec::Q4_1 | Codec::Q5_1 => bld.a.push(u32::from_le_bytes([blk[0], blk[1], blk[2], blk[3]])),
                        _ => halves_a.push(u16::from_le_bytes([blk[0], blk[1]])),
                    }
                    // Q5_1: the 32 fifth bits (bit v for value v) into region c, a word a unit.
                    let q = match codec {
                        Codec::Q4_1 => &blk[4..],
                        Codec::Q5_1 => {
                            bld.c.push(u32::from_le_bytes([blk[4], blk[5], blk[6], blk[7]]));
                            &blk[8..]
                        }
                        _ => &blk[2..],
                    };
                    bld.payload.extend(bytes_to_words(q));
                }
            }
            Codec::Q8Row => {
                bld.a.push(u32::from_le_bytes([row[0], row[1], row[2], row[3]]));
                bld.payload.extend(bytes_to_words(&row[4..]));
            }
            Codec::F16 | Codec::F32 => bld.payload.extend(bytes_to_words(row)),
            Codec::Q4K | Codec::Q5K => {
                // Q5_K: 32 bytes of fifth bits (bit j of byte l: value l of unit j) before
                // the nibbles; in region c a word a unit, bit v for value v.
                let (block, high) = if codec == Codec::Q5K { (176, 32) } else { (144, 0) };
                for sb in row.chunks_exact(block) {
                    bld.a.push(u32::from_le_bytes([sb[0], sb[1], sb[2], sb[3]]));
                    let (scales, qh, qs) = (&sb[4..16], &sb[16..16 + high], &sb[16 + high..block]);
                    for j in 0..8 {
                        let (s, m) = cortiq_core::codec::k4_scale_min(j, scales);
                        halves_b.push(s as u16 | (m as u16) << 8);
                        let chunk = &qs[32 * (j / 2)..32 * (j / 2) + 32];
                        let levels: Vec<u8> = chunk.iter().map(|q| if j % 2 == 0 { q & 15 } else { q >> 4 }).collect();
                        bld.payload.extend(nibble_words(&levels));
                        if codec == Codec::Q5K {
                            bld.c.push(q5_k_high_word(qh, j));
                        }
                    }
                }
            }
            Codec::Q6K => {
                for sb in row.chunks_exact(210) {
                    bld.a.push(f16_at(sb, 208).to_f32().to_bits());
                    bld.b.extend(bytes_to_words(&sb[192..208]));
                    let levels = q6k_levels(sb);
                    for u in levels.chunks_exact(32) {
                        bld.payload.extend(nibble_words(u));
                        let mut hi = [0u32; 2];
                        for (i, l) in u.iter().enumerate() {
                            hi[i / 16] |= ((l >> 4) as u32 & 3) << (2 * (i % 16));
                        }
                        bld.c.extend(hi);
                    }
                }
            }
            _ => return None,
        }
    }
    if !halves_a.is_empty() {
        bld.a = pack_halves(&halves_a);
    }
    if !halves_b.is_empty() {
        bld.b = pack_halves(&halves_b);
    }
    Some(bld.finish(units))
}

/// Repack a Q4_0 / Q4_1 / Q8_0 matrix (`rows x cols`, GGUF blocks of 32 values) into the
/// planar layout in unit-major order: unit (row r, unit u) at planar unit u * rows + r, so the
/// units of one column block over every row are contiguous (the fused FFN's down projection,
/// whose blocks each take a few columns of it: `ffn_fused` in graph.cu). It is the planar
/// layout of the matrix whose row u is column block u gathered over the rows; `None` for other
/// codecs or a shape the bytes do not match.
pub fn repack_unit_major(codec: Codec, rows: usize, cols: usize, bytes: &[u8]) -> Option<Planar> {
    if !matches!(codec, Codec::Q4_0 | Codec::Q4_1 | Codec::Q8_0) || !supports(codec, cols) || codec.tensor_bytes(rows as u64, cols as u64)? != bytes.len() as u64 {
        return None;
    }
    let units = cols / 32;
    let block = bytes.len() / (rows * units).max(1);
    let mut gathered = Vec::with_capacity(bytes.len());
    for u in 0..units {
        for r in 0..rows {
            let at = (r * units + u) * block;
            gathered.extend_from_slice(&bytes[at..at + block]);
        }
    }
    repack(codec, units, rows * 32, &gathered)
}

/// A bound on the magnitude of every value a repacked Q4_0 / q4_tiled / Q4_1 / Q8_0 matrix
/// decodes to, from the largest scales in its region a (8 |d|, 15 |d| + |m|, 128 |d|): SPEC
/// section 6's f16 guard on the weights the matrix units take. Infinite for every other
/// codec and wherever a scale is not finite.
pub fn value_bound(codec: Codec, p: &Planar) -> f32 {
    let scales = &p.words[p.a as usize..p.b as usize];
    // f16 magnitudes order as their bits; all exponent bits set is infinity or NaN.
    let magnitude = |bits: u32| if bits >= 0x7c00 { f32::INFINITY } else { f16::from_bits(bits as u16).to_f32() };
    let (low, high) = scales.iter().fold((0, 0), |(l, h), w| (l.max(w & 0x7fff), h.max((w >> 16) & 0x7fff)));
    let (low, high) = (magnitude(low), magnitude(high));
    match codec {
        Codec::Q4_0 | Codec::Q4Tiled => 8.0 * low.max(high),
        Codec::Q8_0 => 128.0 * low.max(high),
        Codec::Q4_1 => 15.0 * low + high,
        _ => f32::INFINITY,
    }
}

/// Q6_K's 256 levels (0..63) of one superblock, in value order.
pub(super) fn q6k_levels(sb: &[u8]) -> [u8; 256] {
    let mut out = [0u8; 256];
    for n in 0..2 {
        let (ql, qh) = (&sb[64 * n..64 * n + 64], &sb[128 + 32 * n..128 + 32 * n + 32]);
        for l in 0..32 {
            let y = &mut out[128 * n..];
            y[l] = (ql[l] & 15) | ((qh[l] & 3) << 4);
            y[l + 32] = (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4);
            y[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            y[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    /// The shader's decode of unit `u` of row `r`, written out in Rust (the twin of the
    /// `unit_dot` functions in matvec.wgsl and matvec.cu, with x = one-hot vectors).
    pub(in crate::gpu) fn decode_unit(codec: Codec, p: &Planar, r: usize, u: usize) -> Vec<f32> {
        let w = &p.words;
        let n = r * p.units_per_row as usize + u;
        let half = |region: u32, i: usize| {
            let word = w[region as usize + i / 2];
            f16::from_bits((word >> (16 * (i % 2))) as u16).to_f32()
        };
        let nib = |base: usize| -> Vec<u32> { (0..32).map(|v| (w[base + (v % 16) / 4] >> (8 * (v % 4) + 4 * (v / 16))) & 15).collect() };
        let int8 = |base: usize, k: usize| -> Vec<f32> { (0..k).map(|v| ((w[base + v / 4] >> (8 * (v % 4))) as u8 as i8) as f32).collect() };
        match codec {
            Codec::Q4_0 | Codec::Q4Tiled => nib(n * 4).iter().map(|&q| half(p.a, n) * (q as f32 - 8.0)).collect(),
            Codec::Q4_1 | Codec::Q5_1 => {
                let (d, m) = (half(p.a, 2 * n), half(p.a, 2 * n + 1));
                let high = if codec == Codec::Q5_1 { w[p.c as usize + n] } else { 0 };
                nib(n * 4).iter().enumerate().map(|(v, &q)| d * (q | (high >> v & 1) << 4) as f32 + m).collect()
            }
            Codec::Q8_0 => int8(n * 8, 32).iter().map(|q| half(p.a, n) * q).collect(),
            Codec::Q8Row => {
                let s = f32::from_bits(w[p.a as usize + r]);
                int8(n * 4, 16).iter().map(|q| s * q).collect()
            }
            Codec::F16 => (0..8).map(|v| half(0, 8 * n + v)).collect(),
            Codec::F32 => (0..4).map(|v| f32::from_bits(w[4 * n + v])).collect(),
            Codec::Q4K | Codec::Q5K => {
                let (d, dmin) = (half(p.a, 2 * (n / 8)), half(p.a, 2 * (n / 8) + 1));
                let sm = w[p.b as usize + n / 2] >> (16 * (n % 2));
                let (s, m) = ((sm & 255) as f32, ((sm >> 8) & 255) as f32);
                let high = if codec == Codec::Q5K { w[p.c as usize + n] } else { 0 };
                nib(n * 4).iter().enumerate().map(|(v, &q)| d * s * (q | (high >> v & 1) << 4) as f32 - dmin * m).collect()
            }
            Codec::Q6K => {
                let d = f32::from_bits(w[p.a as usize + n / 8]);
                let lo = nib(n * 4);
                (0..32)
                    .map(|v| {
                        let hi = (w[p.c as usize + 2 * n + v / 16] >> (2 * (v % 16))) & 3;
                        let q = (lo[v] | hi << 4) as f32 - 32.0;
                        let si = 2 * n + v / 16;
                        let sc = (w[p.b as usize + si / 4] >> (8 * (si % 4))) as u8 as i8 as f32;
                        d * sc * q
                    })
                    .collect()
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn value_bound_follows_the_block_scales() {
        // One row of two blocks (64 values) with these scales (f16 halves first in a block).
        let bound = |codec: Codec, len: usize, blocks: [&[f32]; 2]| {
            let bytes: Vec<u8> = blocks
                .iter()
                .flat_map(|halves| {
                    let mut b = vec![0x11u8; len];
                    for (i, &h) in halves.iter().enumerate() {
                        b[2 * i..2 * i + 2].copy_from_slice(&f16::from_f32(h).to_bits().to_le_bytes());
                    }
                    b
                })
                .collect();
            value_bound(codec, &repack(codec, 1, 64, &bytes).unwrap())
        };
        assert_eq!(bound(Codec::Q4_0, 18, [&[0.5], &[-1000.0]]), 8000.0);
        assert_eq!(bound(Codec::Q4Tiled, 18, [&[-1000.0], &[0.5]]), 8000.0);
        assert_eq!(bound(Codec::Q4_1, 20, [&[2.0, -3.0], &[-1.0, 0.5]]), 33.0);
        // Q8_0 at d = 600: 128 d = 76800, past f16's 65504.
        assert_eq!(bound(Codec::Q8_0, 34, [&[0.01], &[600.0]]), 76800.0);
        assert_eq!(bound(Codec::Q8_0, 34, [&[1.0], &[f32::NAN]]), f32::INFINITY);
        assert_eq!(bound(Codec::Q4_1, 20, [&[1.0, f32::INFINITY], &[1.0, 1.0]]), f32::INFINITY);
        let f16_row: Vec<u8> = (0..64).flat_map(|_| f16::from_f32(1.0).to_bits().to_le_bytes()).collect();
        assert_eq!(value_bound(Codec::F16, &repack(Codec::F16, 1, 64, &f16_row).unwrap()), f32::INFINITY);
    }

    #[test]
    fn every_codec_repacks_to_the_values_the_codec_decodes() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        let codecs = [Codec::Q4_0, Codec::Q4Tiled, Codec::Q4_1, Codec::Q8_0, Codec::Q8Row, Codec::F16, Codec::F32, Codec::Q4K, Codec::Q5K, Codec::Q6K, Codec::Q5_1];
        for codec in codecs {
            for (rows, cols) in [(1, 256), (3, 512), (5, 768)] {
                let data = rng.normals(rows * cols, 0.5);
                let bytes: Vec<u8> = data.chunks(cols).flat_map(|r| codec.pack_row(r).unwrap()).collect();
                let p = repack(codec, rows, cols, &bytes).unwrap();
                assert!(p.words.len() * 4 >= rows * bytes_per_row(codec, cols), "{codec}");
                let (unit, _) = unit_shape(codec).unwrap();
                for r in 0..rows {
                    let mut want = vec![0f32; cols];
                    codec.unpack_row(&bytes[r * bytes.len() / rows..(r + 1) * bytes.len() / rows], &mut want).unwrap();
                    let got: Vec<f32> = (0..cols / unit).flat_map(|u| decode_unit(codec, &p, r, u)).collect();
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!((g - w).abs() <= 1e-6 * (1.0 + w.abs()), "{codec} {rows}x{cols} row {r} value {i}: {g} vs {w}, seed {seed}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_unit_major_layout_holds_each_unit_at_its_column_block_over_the_rows() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for codec in [Codec::Q4_0, Codec::Q4_1, Codec::Q8_0] {
            for (rows, cols) in [(1, 32), (3, 96), (64, 256), (33, 160)] {
                let data = rng.normals(rows * cols, 0.5);
                let bytes: Vec<u8> = data.chunks(cols).flat_map(|r| codec.pack_row(r).unwrap()).collect();
                let (plain, major) = (repack(codec, rows, cols, &bytes).unwrap(), repack_unit_major(codec, rows, cols, &bytes).unwrap());
                assert_eq!(plain.words.len(), major.words.len(), "{codec} {rows}x{cols}");
                let units = cols / 32;
                for r in 0..rows {
                    for u in 0..units {
                        // Unit u * rows + r of the unit-major matrix: its planar row u, unit r.
                        assert_eq!(decode_unit(codec, &major, u, r), decode_unit(codec, &plain, r, u), "{codec} {rows}x{cols} unit ({r}, {u}), seed {seed}");
                    }
                }
            }
        }
        assert!(repack_unit_major(Codec::F16, 1, 32, &[0u8; 64]).is_none());
        assert!(repack_unit_major(Codec::Q4_0, 2, 32, &[0u8; 18]).is_none(), "byte count must match the shape");
    }

    #[test]
    fn codecs_and_widths_without_a_shader_are_refused() {
        assert!(repack(Codec::Q5_0, 1, 32, &[0u8; 22]).is_none());
        assert!(!supports(Codec::Q8Row, 17));
        assert!(!supports(Codec::Q4K, 32 * 3) && !supports(Codec::Q5K, 32 * 9));
        assert!(repack(Codec::Q4_0, 2, 32, &[0u8; 18]).is_none(), "byte count must match the shape");
    }
}
