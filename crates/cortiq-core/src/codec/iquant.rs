//! The 4-bit non-linear i-quants, bit-exact with ggml's layouts: each nibble indexes
//! `IQ4_LEVELS`, and within a block of 32 values byte l holds value l (low nibble) and value
//! l + 16 (high nibble).
//! - IQ4_NL (18 B per 32 values): f16 d, 16 B of nibbles; w = d * LEVELS[q].
//! - IQ4_XS (136 B per 256 values): f16 d, u16 scales_h, 4 B scales_l, 128 B of nibbles; the
//!   6-bit scale of block k (stored plus 32) has its low nibble in scales_l[k / 2] at bit
//!   4 (k % 2) and its high pair in scales_h at bit 2k; w = d * (scale - 32) * LEVELS[q].
//!
//! Packing maps each block's largest magnitude to level -127 and rounds to the nearest
//! level (valid encodings, not ggml's error-optimal search).

use super::q4::f16_at;
use half::f16;

/// ggml's `kvalues_iq4nl`.
pub(super) const IQ4_LEVELS: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// The index of the level nearest `t` (in level units).
fn nearest_level(t: f32) -> u8 {
    let mut best = 0;
    for (i, &l) in IQ4_LEVELS.iter().enumerate() {
        if (t - l as f32).abs() < (t - IQ4_LEVELS[best] as f32).abs() {
            best = i;
        }
    }
    best as u8
}

/// The value of largest magnitude in `x` (its sign kept), 0 for an empty or all-zero slice.
fn signed_max(x: &[f32]) -> f32 {
    x.iter().copied().fold(0f32, |m, v| if v.abs() > m.abs() { v } else { m })
}

/// Nibbles of 32 values `x` at step `step` into 16 bytes (value l low, l + 16 high).
fn put_nibbles(x: &[f32], step: f32, qs: &mut [u8]) {
    for l in 0..16 {
        let q = |v: f32| if step != 0.0 { nearest_level(v / step) } else { nearest_level(0.0) };
        qs[l] = q(x[l]) | (q(x[l + 16]) << 4);
    }
}

/// 32 values from 16 nibble bytes at scale `dl`.
fn get_nibbles(qs: &[u8], dl: f32, y: &mut [f32]) {
    for l in 0..16 {
        y[l] = dl * IQ4_LEVELS[(qs[l] & 15) as usize] as f32;
        y[l + 16] = dl * IQ4_LEVELS[(qs[l] >> 4) as usize] as f32;
    }
}

pub(super) fn pack_iq4_nl(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(32).zip(out.chunks_exact_mut(18)) {
        let d = f16::from_f32(signed_max(x) / IQ4_LEVELS[0] as f32);
        blk[..2].copy_from_slice(&d.to_le_bytes());
        put_nibbles(x, d.to_f32(), &mut blk[2..18]);
    }
}

pub(super) fn unpack_iq4_nl(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
        get_nibbles(&blk[2..18], f16_at(blk, 0), y);
    }
}

pub(super) fn pack_iq4_xs(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(256).zip(out.chunks_exact_mut(136)) {
        // Each block's ideal step, then the steps as 6-bit signed multiples of d.
        let steps: [f32; 8] = std::array::from_fn(|k| signed_max(&x[32 * k..32 * k + 32]) / IQ4_LEVELS[0] as f32);
        let d = f16::from_f32(steps.iter().fold(0f32, |m, s| m.max(s.abs())) / 31.0);
        let df = d.to_f32();
        blk.fill(0);
        blk[..2].copy_from_slice(&d.to_le_bytes());
        let mut scales_h = 0u16;
        for k in 0..8 {
            let ls = if df > 0.0 { (steps[k] / df).round().clamp(-32.0, 31.0) as i32 } else { 0 };
            let stored = (ls + 32) as u8;
            blk[4 + k / 2] |= (stored & 15) << (4 * (k % 2));
            scales_h |= ((stored >> 4) as u16) << (2 * k);
            put_nibbles(&x[32 * k..32 * k + 32], df * ls as f32, &mut blk[8 + 16 * k..24 + 16 * k]);
        }
        blk[2..4].copy_from_slice(&scales_h.to_le_bytes());
    }
}

/// The signed 6-bit scale (-32..31) of block `k` (0..8) of an IQ4_XS super-block.
pub(super) fn iq4_xs_scale(blk: &[u8], k: usize) -> i32 {
    let low = (blk[4 + k / 2] >> (4 * (k % 2))) & 15;
    let high = (u16::from_le_bytes([blk[2], blk[3]]) >> (2 * k)) as u8 & 3;
    (low | (high << 4)) as i32 - 32
}

pub(super) fn unpack_iq4_xs(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(136).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(blk, 0);
        for (k, yk) in y.chunks_exact_mut(32).enumerate() {
            get_nibbles(&blk[8 + 16 * k..24 + 16 * k], d * iq4_xs_scale(blk, k) as f32, yk);
        }
    }
}
