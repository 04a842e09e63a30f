//! Q8_0 (34 bytes: f16 d, 32 int8; w = d * q) and cortiq's q8_row
//! (f32 scale, then one int8 per value; w = scale * q).

use super::q4::f16_at;
use half::f16;

pub(super) fn pack_q8_0(row: &[f32], out: &mut [u8]) {
    for (x, blk) in row.chunks_exact(32).zip(out.chunks_exact_mut(34)) {
        let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        blk[0..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
        for j in 0..32 {
            blk[2 + j] = (x[j] * id).round().clamp(-127.0, 127.0) as i8 as u8;
        }
    }
}

pub(super) fn unpack_q8_0(bytes: &[u8], out: &mut [f32]) {
    for (blk, y) in bytes.chunks_exact(34).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(blk, 0);
        for j in 0..32 {
            y[j] = d * (blk[2 + j] as i8) as f32;
        }
    }
}

pub(super) fn pack_q8_row(row: &[f32], out: &mut [u8]) {
    let amax = row.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = amax / 127.0;
    let inv = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    out[0..4].copy_from_slice(&scale.to_le_bytes());
    for (o, v) in out[4..].iter_mut().zip(row) {
        *o = (v * inv).round().clamp(-127.0, 127.0) as i8 as u8;
    }
}

pub(super) fn unpack_q8_row(bytes: &[u8], out: &mut [f32]) {
    let scale = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    for (o, q) in out.iter_mut().zip(&bytes[4..]) {
        *o = scale * (*q as i8) as f32;
    }
}
