//! The 2- and 3-bit K-quants, 256 values per super-block in 16 sub-blocks of 16, bit-exact
//! with ggml's layouts (value 128n + 32j + l of a super-block takes bits 2j..2j + 2 of
//! qs[32n + l]):
//! - Q2_K (84 B): 16 bytes of 4-bit (scale, min) pairs (scale low), 64 B of 2-bit levels,
//!   f16 d, f16 dmin; w = d * scale * q - dmin * min.
//! - Q3_K (110 B): 32 B hmask (bit i of byte l: value 32i + l has its level as is, else
//!   less 4), 64 B of 2-bit levels, 12 B of 6-bit scales, f16 d; w = d * (scale - 32) * q.
//!
//! Packing uses a simple per-sub-block min/max quantizer (valid encodings, not ggml's
//! error-optimal search).

use super::q4::f16_at;
use half::f16;

/// The 2-bit level of value `v` (0..256) of a super-block's 64 level bytes.
fn level2(qs: &[u8], v: usize) -> u8 {
    let (n, j, l) = (v / 128, (v % 128) / 32, v % 32);
    (qs[32 * n + l] >> (2 * j)) & 3
}

/// Store the 2-bit level `q` of value `v` (the inverse of `level2`; the byte starts at 0).
fn put_level2(qs: &mut [u8], v: usize, q: u8) {
    let (n, j, l) = (v / 128, (v % 128) / 32, v % 32);
    qs[32 * n + l] |= (q & 3) << (2 * j);
}

pub(super) fn pack_q2_k(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(256).zip(out.chunks_exact_mut(84)) {
        // Per sub-block the range [lo, hi] (lo at most 0) over 3 steps; the steps and -lo as
        // 4-bit multiples of d and dmin.
        let (mut steps, mut mins) = ([0f32; 16], [0f32; 16]);
        for (k, sub) in x.chunks_exact(16).enumerate() {
            let lo = sub.iter().copied().fold(0f32, f32::min);
            let hi = sub.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            steps[k] = (hi - lo) / 3.0;
            mins[k] = -lo;
        }
        let d = f16::from_f32(steps.iter().copied().fold(0f32, f32::max) / 15.0);
        let dmin = f16::from_f32(mins.iter().copied().fold(0f32, f32::max) / 15.0);
        let (df, dminf) = (d.to_f32(), dmin.to_f32());
        blk.fill(0);
        for k in 0..16 {
            let ls = if df > 0.0 { (steps[k] / df).round().clamp(0.0, 15.0) as u8 } else { 0 };
            let lm = if dminf > 0.0 { (mins[k] / dminf).round().clamp(0.0, 15.0) as u8 } else { 0 };
            blk[k] = ls | (lm << 4);
            let (step, min) = (df * ls as f32, dminf * lm as f32);
            for (v, &xv) in x.iter().enumerate().skip(16 * k).take(16) {
                let q = if step > 0.0 { ((xv + min) / step).round().clamp(0.0, 3.0) as u8 } else { 0 };
                put_level2(&mut blk[16..80], v, q);
            }
        }
        blk[80..82].copy_from_slice(&d.to_le_bytes());
        blk[82..84].copy_from_slice(&dmin.to_le_bytes());
    }
}

pub(super) fn unpack_q2_k(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(84).zip(out.chunks_exact_mut(256)) {
        let (d, dmin) = (f16_at(blk, 80), f16_at(blk, 82));
        for (v, yv) in y.iter_mut().enumerate() {
            let sm = blk[v / 16];
            *yv = d * (sm & 15) as f32 * level2(&blk[16..80], v) as f32 - dmin * (sm >> 4) as f32;
        }
    }
}

/// Q3_K's 16 sub-block scales (6 bits, stored plus 32) from the 12 packed bytes: the low
/// nibbles of sub-block k in byte k % 8 (k < 8: low half), the high pairs in byte 8 + k % 4
/// at bit 2 (k / 4), as stored (plus 32). Four sub-blocks a 32-bit word at once, as ggml's
/// masks do.
#[inline]
pub(super) fn q3_stored_scales(s: &[u8]) -> [u8; 16] {
    let word = |i: usize| u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
    let (a0, a1, hi) = (word(0), word(1), word(2));
    let (m4, m2) = (0x0f0f_0f0fu32, 0x0303_0303u32);
    let words = [(a0 & m4) | ((hi & m2) << 4), (a1 & m4) | (((hi >> 2) & m2) << 4), ((a0 >> 4) & m4) | (((hi >> 4) & m2) << 4), ((a1 >> 4) & m4) | (((hi >> 6) & m2) << 4)];
    let all = words.iter().enumerate().fold(0u128, |v, (i, &w)| v | (w as u128) << (32 * i));
    all.to_le_bytes()
}

/// Q3_K's 16 signed sub-block scales (-32..31) from the 12 packed bytes.
fn q3_scales(s: &[u8]) -> [i8; 16] {
    q3_stored_scales(s).map(|b| b as i8 - 32)
}

pub(super) fn pack_q3_k(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(256).zip(out.chunks_exact_mut(110)) {
        // Per sub-block the largest magnitude maps to level 4 (levels -4..3), the steps as
        // 5-bit multiples of d (stored plus 32 in 6 bits).
        let steps: [f32; 16] = std::array::from_fn(|k| x[16 * k..16 * k + 16].iter().fold(0f32, |m, v| m.max(v.abs())) / 4.0);
        let d = f16::from_f32(steps.iter().copied().fold(0f32, f32::max) / 31.0);
        let df = d.to_f32();
        blk.fill(0);
        for k in 0..16 {
            let ls = if df > 0.0 { (steps[k] / df).round().clamp(0.0, 31.0) as u8 } else { 0 };
            let stored = ls + 32;
            blk[96 + k % 8] |= (stored & 15) << (4 * (k / 8));
            blk[104 + k % 4] |= (stored >> 4) << (2 * (k / 4));
            let step = df * ls as f32;
            for v in 16 * k..16 * k + 16 {
                let q = if step > 0.0 { (x[v] / step).round().clamp(-4.0, 3.0) as i32 } else { 0 };
                put_level2(&mut blk[32..96], v, ((q + 4) & 3) as u8);
                if q >= 0 {
                    blk[v % 32] |= 1 << (v / 32);
                }
            }
        }
        blk[108..110].copy_from_slice(&d.to_le_bytes());
    }
}

pub(super) fn unpack_q3_k(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(110).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(blk, 108);
        let scales = q3_scales(&blk[96..108]);
        for (v, yv) in y.iter_mut().enumerate() {
            let high = (blk[v % 32] >> (v / 32)) & 1;
            let q = level2(&blk[32..96], v) as i32 - if high == 1 { 0 } else { 4 };
            *yv = d * scales[v / 16] as f32 * q as f32;
        }
    }
}
