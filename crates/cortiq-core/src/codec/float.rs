//! F32, F16 and BF16: plain little-endian floats.

use super::Codec;
use half::{bf16, f16};

pub(super) fn pack(codec: Codec, row: &[f32], out: &mut [u8]) {
    match codec {
        Codec::F32 => {
            for (o, v) in out.chunks_exact_mut(4).zip(row) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
        Codec::F16 => {
            for (o, v) in out.chunks_exact_mut(2).zip(row) {
                o.copy_from_slice(&f16::from_f32(*v).to_le_bytes());
            }
        }
        Codec::BF16 => {
            for (o, v) in out.chunks_exact_mut(2).zip(row) {
                o.copy_from_slice(&bf16::from_f32(*v).to_le_bytes());
            }
        }
        _ => unreachable!("float::pack called for {codec}"),
    }
}

pub(super) fn unpack(codec: Codec, bytes: &[u8], out: &mut [f32]) {
    match codec {
        Codec::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Codec::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        Codec::BF16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
        _ => unreachable!("float::unpack called for {codec}"),
    }
}
