//! Quant codecs: the bit-exact GGUF block layouts plus cortiq's q8_row and q4_tiled.
//! Each codec can pack f32 rows, unpack them back to f32, and take a reference dot product
//! of a packed row with f32 activations. These are the readable references that every fast
//! kernel (CPU SIMD or GPU) is tested against.

mod float;
mod iquant;
mod kquant;
mod kquant_low;
mod q4;
mod q8;

use crate::error::{invalid, Result};

/// Q4_K / Q5_K: the 6-bit scale and min of sub-block `j` (0..8) from a super-block's 12
/// packed bytes (ggml's `get_scale_min_k4`), for kernels that decode the layout themselves.
#[inline]
pub fn k4_scale_min(j: usize, packed: &[u8]) -> (u8, u8) {
    kquant::scale_min(j, packed)
}

/// IQ4_NL / IQ4_XS: the signed level each nibble stands for (ggml's `kvalues_iq4nl`).
pub const IQ4_LEVELS: [i8; 16] = iquant::IQ4_LEVELS;

/// IQ4_XS: the signed scale (-32..31) of 32-value block `k` (0..8) of a 136-byte super-block.
#[inline]
pub fn iq4_xs_scale(superblock: &[u8], k: usize) -> i32 {
    iquant::iq4_xs_scale(superblock, k)
}

/// Q4_K / Q5_K: all eight (scales, minimums) of a super-block's 12 packed bytes at once.
#[inline]
pub fn k4_scales_mins(packed: &[u8]) -> ([u8; 8], [u8; 8]) {
    kquant::scales_mins(packed)
}

/// Q3_K: the 16 scales of a super-block's 12 packed scale bytes as stored: 0..64, the
/// scale plus 32.
#[inline]
pub fn q3_k_stored_scales(packed: &[u8]) -> [u8; 16] {
    kquant_low::q3_stored_scales(packed)
}

/// GGML's name for type id `id` (gguf-py's `GGMLQuantizationType`), or "unknown".
pub fn ggml_type_name(id: u32) -> &'static str {
    const NAMES: [&str; 42] = [
        "F32", "F16", "Q4_0", "Q4_1", "", "", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
        "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16", "", "", "", "TQ1_0", "TQ2_0", "", "", "", "MXFP4", "NVFP4", "Q1_0",
    ];
    NAMES.get(id as usize).copied().filter(|n| !n.is_empty()).unwrap_or("unknown")
}

/// A tensor encoding. Rows are independent: a row of `cols` values is `row_bytes(cols)` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    IQ4NL,
    IQ4XS,
    /// cortiq: int8 rows, one f32 scale per row (scale first, then `cols` int8 values).
    Q8Row,
    /// cortiq: 18-byte tiles of 32 weights, f16 scale + 16 bytes of nibbles. Byte-identical
    /// to GGUF Q4_0, so a Q4_0 tensor maps to it without a copy.
    Q4Tiled,
}

pub const ALL_CODECS: [Codec; 17] = [
    Codec::F32,
    Codec::F16,
    Codec::BF16,
    Codec::Q4_0,
    Codec::Q4_1,
    Codec::Q5_0,
    Codec::Q5_1,
    Codec::Q8_0,
    Codec::Q2K,
    Codec::Q3K,
    Codec::Q4K,
    Codec::Q5K,
    Codec::Q6K,
    Codec::IQ4NL,
    Codec::IQ4XS,
    Codec::Q8Row,
    Codec::Q4Tiled,
];

impl Codec {
    /// The GGUF (ggml) type id, for codecs GGUF has.
    pub fn ggml_type(self) -> Option<u32> {
        Some(match self {
            Codec::F32 => 0,
            Codec::F16 => 1,
            Codec::Q4_0 => 2,
            Codec::Q4_1 => 3,
            Codec::Q5_0 => 6,
            Codec::Q5_1 => 7,
            Codec::Q8_0 => 8,
            Codec::Q2K => 10,
            Codec::Q3K => 11,
            Codec::Q4K => 12,
            Codec::Q5K => 13,
            Codec::Q6K => 14,
            Codec::IQ4NL => 20,
            Codec::IQ4XS => 23,
            Codec::BF16 => 30,
            Codec::Q8Row | Codec::Q4Tiled => return None,
        })
    }

    /// The codec for a GGUF type id, if cortiq reads it.
    pub fn from_ggml_type(id: u32) -> Option<Codec> {
        ALL_CODECS.into_iter().find(|c| c.ggml_type() == Some(id))
    }

    /// The id used in CMF files (stable; never reuse a number).
    pub fn cmf_id(self) -> u32 {
        match self {
            Codec::F32 => 0,
            Codec::F16 => 1,
            Codec::BF16 => 2,
            Codec::Q4_0 => 3,
            Codec::Q4_1 => 4,
            Codec::Q8_0 => 5,
            Codec::Q4K => 6,
            Codec::Q5K => 7,
            Codec::Q6K => 8,
            Codec::Q8Row => 9,
            Codec::Q4Tiled => 10,
            Codec::Q5_0 => 11,
            Codec::Q5_1 => 12,
            Codec::Q2K => 13,
            Codec::Q3K => 14,
            Codec::IQ4NL => 15,
            Codec::IQ4XS => 16,
        }
    }

    pub fn from_cmf_id(id: u32) -> Option<Codec> {
        ALL_CODECS.into_iter().find(|c| c.cmf_id() == id)
    }

    /// Lower-case name as users type it (`q4_0`, `q8_row`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Codec::F32 => "f32",
            Codec::F16 => "f16",
            Codec::BF16 => "bf16",
            Codec::Q4_0 => "q4_0",
            Codec::Q4_1 => "q4_1",
            Codec::Q5_0 => "q5_0",
            Codec::Q5_1 => "q5_1",
            Codec::Q8_0 => "q8_0",
            Codec::Q2K => "q2_k",
            Codec::Q3K => "q3_k",
            Codec::Q4K => "q4_k",
            Codec::Q5K => "q5_k",
            Codec::Q6K => "q6_k",
            Codec::IQ4NL => "iq4_nl",
            Codec::IQ4XS => "iq4_xs",
            Codec::Q8Row => "q8_row",
            Codec::Q4Tiled => "q4_tiled",
        }
    }

    pub fn from_name(name: &str) -> Option<Codec> {
        let lower = name.to_ascii_lowercase();
        ALL_CODECS.into_iter().find(|c| c.name() == lower)
    }

    /// Values per block (q8_row: the whole row is one block, reported as 1 here).
    pub fn block_len(self) -> usize {
        match self {
            Codec::F32 | Codec::F16 | Codec::BF16 | Codec::Q8Row => 1,
            Codec::Q4_0 | Codec::Q4_1 | Codec::Q5_0 | Codec::Q5_1 | Codec::Q8_0 | Codec::Q4Tiled | Codec::IQ4NL => 32,
            Codec::Q2K | Codec::Q3K | Codec::Q4K | Codec::Q5K | Codec::Q6K | Codec::IQ4XS => 256,
        }
    }

    fn block_bytes(self) -> usize {
        match self {
            Codec::F32 => 4,
            Codec::F16 | Codec::BF16 => 2,
            Codec::Q8Row => 1,
            Codec::Q4_0 | Codec::Q4Tiled | Codec::IQ4NL => 18,
            Codec::Q4_1 => 20,
            Codec::Q5_0 => 22,
            Codec::Q5_1 => 24,
            Codec::Q8_0 => 34,
            Codec::Q2K => 84,
            Codec::Q3K => 110,
            Codec::Q4K => 144,
            Codec::Q5K => 176,
            Codec::Q6K => 210,
            Codec::IQ4XS => 136,
        }
    }

    /// Bytes of one row of `cols` values, or `None` when `cols` is not a whole number of
    /// blocks (or the size overflows).
    pub fn row_bytes(self, cols: u64) -> Option<u64> {
        let bl = self.block_len() as u64;
        if !cols.is_multiple_of(bl) {
            return None;
        }
        let body = (cols / bl).checked_mul(self.block_bytes() as u64)?;
        if self == Codec::Q8Row {
            body.checked_add(4)
        } else {
            Some(body)
        }
    }

    /// Bytes of a whole tensor of `rows` rows of `cols` values.
    pub fn tensor_bytes(self, rows: u64, cols: u64) -> Option<u64> {
        self.row_bytes(cols)?.checked_mul(rows)
    }

    /// Encode one row. `row.len()` must be a multiple of `block_len()`.
    pub fn pack_row(self, row: &[f32]) -> Result<Vec<u8>> {
        let bytes = self
            .row_bytes(row.len() as u64)
            .ok_or_else(|| invalid(format!("pack {}", self.name()), format!("{} values is not a whole number of {}-value blocks", row.len(), self.block_len())))?;
        let mut out = vec![0u8; bytes as usize];
        match self {
            Codec::F32 | Codec::F16 | Codec::BF16 => float::pack(self, row, &mut out),
            Codec::Q4_0 | Codec::Q4Tiled => q4::pack_q4_0(row, &mut out),
            Codec::Q4_1 => q4::pack_q4_1(row, &mut out),
            Codec::Q5_0 => q4::pack_q5_0(row, &mut out),
            Codec::Q5_1 => q4::pack_q5_1(row, &mut out),
            Codec::Q8_0 => q8::pack_q8_0(row, &mut out),
            Codec::Q8Row => q8::pack_q8_row(row, &mut out),
            Codec::Q2K => kquant_low::pack_q2_k(row, &mut out),
            Codec::Q3K => kquant_low::pack_q3_k(row, &mut out),
            Codec::Q4K => kquant::pack_q4_k(row, &mut out),
            Codec::Q5K => kquant::pack_q5_k(row, &mut out),
            Codec::Q6K => kquant::pack_q6_k(row, &mut out),
            Codec::IQ4NL => iquant::pack_iq4_nl(row, &mut out),
            Codec::IQ4XS => iquant::pack_iq4_xs(row, &mut out),
        }
        Ok(out)
    }

    /// Decode one row into `out` (`out.len()` values from `bytes`, which must be exactly
    /// `row_bytes(out.len())` long).
    pub fn unpack_row(self, bytes: &[u8], out: &mut [f32]) -> Result<()> {
        self.check_row(bytes, out.len())?;
        match self {
            Codec::F32 | Codec::F16 | Codec::BF16 => float::unpack(self, bytes, out),
            Codec::Q4_0 | Codec::Q4Tiled => q4::unpack_q4_0(bytes, out),
            Codec::Q4_1 => q4::unpack_q4_1(bytes, out),
            Codec::Q5_0 => q4::unpack_q5_0(bytes, out),
            Codec::Q5_1 => q4::unpack_q5_1(bytes, out),
            Codec::Q8_0 => q8::unpack_q8_0(bytes, out),
            Codec::Q8Row => q8::unpack_q8_row(bytes, out),
            Codec::Q2K => kquant_low::unpack_q2_k(bytes, out),
            Codec::Q3K => kquant_low::unpack_q3_k(bytes, out),
            Codec::Q4K => kquant::unpack_q4_k(bytes, out),
            Codec::Q5K => kquant::unpack_q5_k(bytes, out),
            Codec::Q6K => kquant::unpack_q6_k(bytes, out),
            Codec::IQ4NL => iquant::unpack_iq4_nl(bytes, out),
            Codec::IQ4XS => iquant::unpack_iq4_xs(bytes, out),
        }
        Ok(())
    }

    /// Reference dot product of a packed row with f32 activations `x`, accumulated in f64.
    /// Slow on purpose: it is the definition fast kernels are measured against.
    pub fn dot_row(self, bytes: &[u8], x: &[f32]) -> Result<f32> {
        let mut w = vec![0f32; x.len()];
        self.unpack_row(bytes, &mut w)?;
        Ok(w.iter().zip(x).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() as f32)
    }

    fn check_row(self, bytes: &[u8], cols: usize) -> Result<()> {
        match self.row_bytes(cols as u64) {
            Some(n) if n == bytes.len() as u64 => Ok(()),
            Some(n) => Err(invalid(format!("{} row of {cols} values", self.name()), format!("expected {n} bytes, found {}", bytes.len()))),
            None => Err(invalid(format!("{} row", self.name()), format!("{cols} values is not a whole number of {}-value blocks", self.block_len()))),
        }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
