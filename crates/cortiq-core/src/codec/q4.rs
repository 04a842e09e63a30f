//! Q4_0 / q4_tiled (18 bytes: f16 d, 16 nibble bytes; w = d * (q - 8)),
//! Q4_1 (20 bytes: f16 d, f16 m, 16 nibble bytes; w = d * q + m) and
//! Q5_0 (22 bytes: f16 d, u32 of fifth bits, 16 nibble bytes; w = d * (q - 16)) and
//! Q5_1 (24 bytes: f16 d, f16 m, u32 of fifth bits, 16 nibble bytes; w = d * q + m).
//! In a block, byte j holds weight j in its low nibble and weight j + 16 in its high nibble.

use half::f16;

pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([b[at], b[at + 1]]).to_f32()
}

pub(super) fn pack_q4_0(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(32).zip(out.chunks_exact_mut(18)) {
        // The signed value of largest magnitude maps to -8 (as ggml does), using all 16 levels.
        let max = x.iter().copied().fold(0f32, |m, v| if v.abs() > m.abs() { v } else { m });
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        blk[0..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
        for j in 0..16 {
            let lo = ((x[j] * id + 8.5) as i32).clamp(0, 15) as u8;
            let hi = ((x[j + 16] * id + 8.5) as i32).clamp(0, 15) as u8;
            blk[2 + j] = lo | (hi << 4);
        }
    }
}

pub(super) fn unpack_q4_0(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(blk, 0);
        for j in 0..16 {
            y[j] = d * ((blk[2 + j] & 0x0F) as i32 - 8) as f32;
            y[j + 16] = d * ((blk[2 + j] >> 4) as i32 - 8) as f32;
        }
    }
}

/// Q4_1 / Q5_1's block quantizer: the block's minimum is m and its range spreads over levels
/// 0..=top; writes f16 d and m to `blk[0..4]` and returns the 32 levels.
fn affine_levels(x: &[f32], top: i32, blk: &mut [u8]) -> [u32; 32] {
    let min = x.iter().copied().fold(f32::INFINITY, f32::min);
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let d = (max - min) / top as f32;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    blk[0..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
    blk[2..4].copy_from_slice(&f16::from_f32(min).to_le_bytes());
    std::array::from_fn(|j| (((x[j] - min) * id + 0.5) as i32).clamp(0, top) as u32)
}

pub(super) fn pack_q4_1(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(32).zip(out.chunks_exact_mut(20)) {
        let levels = affine_levels(x, 15, blk);
        for j in 0..16 {
            blk[4 + j] = (levels[j] | (levels[j + 16] << 4)) as u8;
        }
    }
}

pub(super) fn unpack_q4_1(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(20).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(blk, 0);
        let m = f16_at(blk, 2);
        for j in 0..16 {
            y[j] = d * (blk[4 + j] & 0x0F) as f32 + m;
            y[j + 16] = d * (blk[4 + j] >> 4) as f32 + m;
        }
    }
}

pub(super) fn pack_q5_0(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(32).zip(out.chunks_exact_mut(22)) {
        // As Q4_0: the signed value of largest magnitude maps to -16.
        let max = x.iter().copied().fold(0f32, |m, v| if v.abs() > m.abs() { v } else { m });
        let d = max / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        blk[0..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
        let mut qh = 0u32;
        for j in 0..16 {
            let lo = ((x[j] * id + 16.5) as i32).clamp(0, 31) as u32;
            let hi = ((x[j + 16] * id + 16.5) as i32).clamp(0, 31) as u32;
            blk[6 + j] = ((lo & 15) | ((hi & 15) << 4)) as u8;
            qh |= ((lo >> 4) << j) | ((hi >> 4) << (j + 16));
        }
        blk[2..6].copy_from_slice(&qh.to_le_bytes());
    }
}

pub(super) fn unpack_q5_0(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(22).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(blk, 0);
        let qh = u32::from_le_bytes([blk[2], blk[3], blk[4], blk[5]]);
        for j in 0..16 {
            let lo = (blk[6 + j] & 0x0F) as u32 | (((qh >> j) & 1) << 4);
            let hi = (blk[6 + j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * (lo as i32 - 16) as f32;
            y[j + 16] = d * (hi as i32 - 16) as f32;
        }
    }
}

pub(super) fn pack_q5_1(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(32).zip(out.chunks_exact_mut(24)) {
        let levels = affine_levels(x, 31, blk);
        let mut qh = 0u32;
        for j in 0..16 {
            let (lo, hi) = (levels[j], levels[j + 16]);
            blk[8 + j] = ((lo & 15) | ((hi & 15) << 4)) as u8;
            qh |= ((lo >> 4) << j) | ((hi >> 4) << (j + 16));
        }
        blk[4..8].copy_from_slice(&qh.to_le_bytes());
    }
}

pub(super) fn unpack_q5_1(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(24).zip(out.chunks_exact_mut(32)) {
        let (d, m) = (f16_at(blk, 0), f16_at(blk, 2));
        let qh = u32::from_le_bytes([blk[4], blk[5], blk[6], blk[7]]);
        for j in 0..16 {
            let lo = (blk[8 + j] & 0x0F) as u32 | (((qh >> j) & 1) << 4);
            let hi = (blk[8 + j] >> 4) as u32 | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * lo as f32 + m;
            y[j + 16] = d * hi as f32 + m;
        }
    }
}
