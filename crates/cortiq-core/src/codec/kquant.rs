//! K-quants, 256 values per super-block, bit-exact with ggml's layouts:
//! - Q4_K (144 B): f16 d, f16 dmin, 12 B of packed 6-bit (scale, min) x 8, 128 B nibbles.
//! - Q5_K (176 B): as Q4_K plus 32 B of fifth bits (qh) before the nibbles.
//! - Q6_K (210 B): 128 B low nibbles, 64 B high 2-bit pairs, 16 int8 scales, f16 d.
//!
//! Packing uses a simple min/max quantizer (valid encodings, not ggml's error-optimal search).

use super::q4::f16_at;
use half::f16;

/// Scale and min of sub-block `j` (0..8) from the 12 packed bytes (ggml `get_scale_min_k4`).
pub(super) fn scale_min(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// All eight scales and mins of the 12 packed bytes (`scale_min` of each j), four a 32-bit
/// word at once as ggml's masks do.
#[inline]
pub(super) fn scales_mins(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let word = |i: usize| u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
    let (w0, w1, w2) = (word(0), word(1), word(2));
    let (m6, m4, m2) = (0x3f3f_3f3fu32, 0x0f0f_0f0fu32, 0x0303_0303u32);
    let bytes = |lo: u32, hi: u32| ((hi as u64) << 32 | lo as u64).to_le_bytes();
    (bytes(w0 & m6, (w2 & m4) | (((w0 >> 6) & m2) << 4)), bytes(w1 & m6, ((w2 >> 4) & m4) | (((w1 >> 6) & m2) << 4)))
}

/// Pack eight 6-bit scales and mins into 12 bytes (inverse of `scale_min`).
fn put_scale_mins(ls: &[u8; 8], lm: &[u8; 8], s: &mut [u8]) {
    for j in 0..8 {
        if j < 4 {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (ls[j] & 0x0F) | ((lm[j] & 0x0F) << 4);
            s[j - 4] |= (ls[j] >> 4) << 6;
            s[j] |= (lm[j] >> 4) << 6;
        }
    }
}

/// Shared Q4_K/Q5_K quantizer: per 32-value sub-block an affine (scale, min) with `levels`
/// steps, scales and mins themselves 6-bit against (d, dmin). Returns (d, dmin, ls, lm, L).
fn affine_superblock(x: &[f32], levels: f32) -> (f16, f16, [u8; 8], [u8; 8], [u8; 256]) {
    let mut scales = [0f32; 8];
    let mut mins = [0f32; 8];
    for (i, sub) in x.chunks_exact(32).enumerate() {
        let lo = sub.iter().copied().fold(0f32, f32::min);
        let hi = sub.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        scales[i] = (hi - lo) / levels;
        mins[i] = -lo;
    }
    let max_scale = scales.iter().copied().fold(0f32, f32::max);
    let max_min = mins.iter().copied().fold(0f32, f32::max);
    let d = f16::from_f32(max_scale / 63.0);
    let dmin = f16::from_f32(max_min / 63.0);
    let (df, dminf) = (d.to_f32(), dmin.to_f32());
    let mut ls = [0u8; 8];
    let mut lm = [0u8; 8];
    let mut big_l = [0u8; 256];
    for i in 0..8 {
        ls[i] = if df > 0.0 { (scales[i] / df).round().clamp(0.0, 63.0) as u8 } else { 0 };
        lm[i] = if dminf > 0.0 { (mins[i] / dminf).round().clamp(0.0, 63.0) as u8 } else { 0 };
        let sc = df * ls[i] as f32;
        let mn = dminf * lm[i] as f32;
        for l in 0..32 {
            let q = if sc > 0.0 { ((x[32 * i + l] + mn) / sc).round() } else { 0.0 };
            big_l[32 * i + l] = q.clamp(0.0, levels) as u8;
        }
    }
    (d, dmin, ls, lm, big_l)
}

pub(super) fn pack_q4_k(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(256).zip(out.chunks_exact_mut(144)) {
        let (d, dmin, ls, lm, big_l) = affine_superblock(x, 15.0);
        blk[0..2].copy_from_slice(&d.to_le_bytes());
        blk[2..4].copy_from_slice(&dmin.to_le_bytes());
        put_scale_mins(&ls, &lm, &mut blk[4..16]);
        let qs = &mut blk[16..144];
        for j in 0..4 {
            for l in 0..32 {
                qs[32 * j + l] = big_l[64 * j + l] | (big_l[64 * j + 32 + l] << 4);
            }
        }
    }
}

pub(super) fn unpack_q4_k(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(144).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(blk, 0);
        let dmin = f16_at(blk, 2);
        let scales = &blk[4..16];
        let qs = &blk[16..144];
        for j in 0..4 {
            let (s1, m1) = scale_min(2 * j, scales);
            let (s2, m2) = scale_min(2 * j + 1, scales);
            let (d1, min1) = (d * s1 as f32, dmin * m1 as f32);
            let (d2, min2) = (d * s2 as f32, dmin * m2 as f32);
            for l in 0..32 {
                let q = qs[32 * j + l];
                y[64 * j + l] = d1 * (q & 0x0F) as f32 - min1;
                y[64 * j + 32 + l] = d2 * (q >> 4) as f32 - min2;
            }
        }
    }
}

pub(super) fn pack_q5_k(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(256).zip(out.chunks_exact_mut(176)) {
        let (d, dmin, ls, lm, big_l) = affine_superblock(x, 31.0);
        blk[0..2].copy_from_slice(&d.to_le_bytes());
        blk[2..4].copy_from_slice(&dmin.to_le_bytes());
        put_scale_mins(&ls, &lm, &mut blk[4..16]);
        let (qh, qs) = blk[16..176].split_at_mut(32);
        for j in 0..4 {
            let (m1, m2) = (1u8 << (2 * j), 2u8 << (2 * j));
            for l in 0..32 {
                let mut lo = big_l[64 * j + l];
                let mut hi = big_l[64 * j + 32 + l];
                if lo > 15 {
                    lo -= 16;
                    qh[l] |= m1;
                }
                if hi > 15 {
                    hi -= 16;
                    qh[l] |= m2;
                }
                qs[32 * j + l] = lo | (hi << 4);
            }
        }
    }
}

pub(super) fn unpack_q5_k(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(176).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(blk, 0);
        let dmin = f16_at(blk, 2);
        let scales = &blk[4..16];
        let qh = &blk[16..48];
        let qs = &blk[48..176];
        for j in 0..4 {
            let (s1, m1) = scale_min(2 * j, scales);
            let (s2, m2) = scale_min(2 * j + 1, scales);
            let (d1, min1) = (d * s1 as f32, dmin * m1 as f32);
            let (d2, min2) = (d * s2 as f32, dmin * m2 as f32);
            let (u1, u2) = (1u8 << (2 * j), 2u8 << (2 * j));
            for l in 0..32 {
                let q = qs[32 * j + l];
                let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
                let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
                y[64 * j + l] = d1 * ((q & 0x0F) + h1) as f32 - min1;
                y[64 * j + 32 + l] = d2 * ((q >> 4) + h2) as f32 - min2;
            }
        }
    }
}

pub(super) fn pack_q6_k(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(256).zip(out.chunks_exact_mut(210)) {
        let mut sub_scale = [0f32; 16];
        for (i, sub) in x.chunks_exact(16).enumerate() {
            sub_scale[i] = sub.iter().fold(0f32, |m, v| m.max(v.abs())) / 31.0;
        }
        let max_scale = sub_scale.iter().copied().fold(0f32, f32::max);
        let d = f16::from_f32(max_scale / 127.0);
        let df = d.to_f32();
        let mut sc = [0i8; 16];
        let mut big_l = [0u8; 256];
        for i in 0..16 {
            sc[i] = if df > 0.0 { (sub_scale[i] / df).round().clamp(-128.0, 127.0) as i8 } else { 0 };
            let s = df * sc[i] as f32;
            for l in 0..16 {
                let q = if s != 0.0 { (x[16 * i + l] / s).round() } else { 0.0 };
                big_l[16 * i + l] = (q.clamp(-32.0, 31.0) as i32 + 32) as u8;
            }
        }
        let (ql, rest) = blk.split_at_mut(128);
        let (qh, rest) = rest.split_at_mut(64);
        let (scales, dbytes) = rest.split_at_mut(16);
        for n in 0..2 {
            let j = 128 * n;
            for l in 0..32 {
                let q1 = big_l[j + l] & 0x0F;
                let q2 = big_l[j + l + 32] & 0x0F;
                let q3 = big_l[j + l + 64] & 0x0F;
                let q4 = big_l[j + l + 96] & 0x0F;
                ql[64 * n + l] = q1 | (q3 << 4);
                ql[64 * n + l + 32] = q2 | (q4 << 4);
                qh[32 * n + l] = (big_l[j + l] >> 4)
                    | ((big_l[j + l + 32] >> 4) << 2)
                    | ((big_l[j + l + 64] >> 4) << 4)
                    | ((big_l[j + l + 96] >> 4) << 6);
            }
        }
        for i in 0..16 {
            scales[i] = sc[i] as u8;
        }
        dbytes.copy_from_slice(&d.to_le_bytes());
    }
}

pub(super) fn unpack_q6_k(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(210).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(blk, 208);
        for n in 0..2 {
            let ql = &blk[64 * n..64 * n + 64];
            let qh = &blk[128 + 32 * n..128 + 32 * n + 32];
            let sc = &blk[192 + 8 * n..192 + 8 * n + 8];
            let y = &mut y[128 * n..128 * n + 128];
            for l in 0..32 {
                let is = l / 16;
                let q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) as i32 - 32;
                let q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
                let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
                let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
                y[l] = d * (sc[is] as i8) as f32 * q1 as f32;
                y[l + 32] = d * (sc[is + 2] as i8) as f32 * q2 as f32;
                y[l + 64] = d * (sc[is + 4] as i8) as f32 * q3 as f32;
                y[l + 96] = d * (sc[is + 6] as i8) as f32 * q4 as f32;
            }
        }
    }
}
