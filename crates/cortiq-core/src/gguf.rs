//! GGUF v2/v3 reader (bounds-checked, zero-copy) and a streaming GGUF writer.
//!
//! Layout: "GGUF" | u32 version | u64 tensor_count | u64 kv_count | kv pairs |
//! tensor infos (name, u32 n_dims, u64 dims.., u32 ggml type, u64 offset) |
//! padding to `general.alignment` (default 32) | tensor data (offsets relative to here).

use crate::codec::Codec;
use crate::error::{invalid, FormatError, Result};
use crate::model_file::{check_layout, TensorInfo};
use crate::value::{write_kv, write_string, Cursor, Value};
use std::io::Write;

pub const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml tensors have at most 4 dimensions; a few more are tolerated, absurd counts are not.
const MAX_DIMS: u32 = 8;

/// A parsed GGUF header.
#[derive(Debug)]
pub struct Parsed {
    pub version: u32,
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    pub alignment: u64,
    pub data_start: u64,
}

/// Parse and validate a whole GGUF file held in memory (a mapped file or a fuzz input).
pub fn parse(bytes: &[u8]) -> Result<Parsed> {
    if bytes.is_empty() {
        return Err(FormatError::Empty);
    }
    let mut c = Cursor::new(bytes);
    let magic = c.take(4, "magic")?;
    if magic != b"GGUF" {
        return Err(FormatError::BadMagic { expected: "GGUF", found: magic.to_vec() });
    }
    let version = c.u32("version")?;
    if version != 2 && version != 3 {
        return Err(FormatError::UnsupportedVersion { format: "GGUF", found: version as u64, supported: "2 and 3" });
    }
    // Smallest possible tensor info: empty name (8) + n_dims (4) + type (4) + offset (8).
    let tensor_count = c.u64("tensor count")?;
    // Smallest possible kv pair: empty key (8) + type (4) + 1 byte.
    let kv_count = c.count("metadata count", 13)?;
    if tensor_count.saturating_mul(24) > c.remaining() {
        return Err(FormatError::AbsurdCount { what: "tensor count".into(), count: tensor_count, len: bytes.len() as u64 });
    }
    let mut metadata = Vec::with_capacity(kv_count as usize);
    for i in 0..kv_count {
        let key = c.string(&format!("metadata key #{i}"))?;
        let ty = c.u32(&format!("type of metadata '{key}'"))?;
        let value = c.value(ty, &key)?;
        metadata.push((key, value));
    }
    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, v)) => match v.as_u64() {
            Some(a) if a > 0 && a.is_power_of_two() && a <= 1 << 20 => a,
            _ => return Err(FormatError::Metadata { key: "general.alignment".into(), detail: format!("{v:?} is not a power of two up to 1 MiB") }),
        },
    };
    let mut raw = Vec::with_capacity(tensor_count as usize);
    for i in 0..tensor_count {
        let name = c.string(&format!("tensor #{i} name"))?;
        let n_dims = c.u32(&format!("tensor '{name}' dimension count"))?;
        if n_dims == 0 || n_dims > MAX_DIMS {
            return Err(invalid(format!("tensor '{name}'"), format!("{n_dims} dimensions (expected 1..={MAX_DIMS})")));
        }
        let mut shape = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            shape.push(c.u64(&format!("tensor '{name}' shape"))?);
        }
        let ty = c.u32(&format!("tensor '{name}' type"))?;
        let codec = Codec::from_ggml_type(ty).ok_or_else(|| unread_type(&name, ty))?;
        let offset = c.u64(&format!("tensor '{name}' offset"))?;
        if offset % alignment != 0 {
            return Err(invalid(format!("tensor '{name}'"), format!("offset {offset} is not a multiple of the alignment {alignment}")));
        }
        let nbytes = TensorInfo::expected_bytes(&name, &shape, codec)?;
        raw.push((name, shape, codec, offset, nbytes));
    }
    let data_start = align_up(c.pos() as u64, alignment);
    let file_len = bytes.len() as u64;
    if data_start > file_len && !raw.is_empty() {
        return Err(FormatError::Truncated { what: "tensor data".into(), offset: c.pos() as u64, needed: data_start - c.pos() as u64, len: file_len });
    }
    let mut tensors = Vec::with_capacity(raw.len());
    for (name, shape, codec, offset, nbytes) in raw {
        let abs = data_start.checked_add(offset).ok_or_else(|| FormatError::TensorOutOfBounds { tensor: name.clone(), start: offset, end: u64::MAX, len: file_len.saturating_sub(data_start) })?;
        tensors.push(TensorInfo { name, shape, codec, offset: abs, nbytes, file: 0, checksum: None });
    }
    check_layout(&tensors, data_start, file_len)?;
    Ok(Parsed { version, metadata, tensors, alignment, data_start })
}

/// The error for tensor `name` of GGML type `id`, which cortiq has no codec for: the type's
/// name and the types it does read.
fn unread_type(name: &str, id: u32) -> FormatError {
    let reads: Vec<&str> = (0..64).filter(|&t| Codec::from_ggml_type(t).is_some()).map(crate::codec::ggml_type_name).collect();
    FormatError::UnreadGgmlType { tensor: name.to_string(), id, name: crate::codec::ggml_type_name(id), reads: reads.join(", ") }
}

pub fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// One tensor as the writer lays it out.
#[derive(Debug, Clone)]
pub struct TensorSpec {
    pub name: String,
    /// ggml order (columns first).
    pub shape: Vec<u64>,
    pub codec: Codec,
}

/// Streaming GGUF v3 writer: the header (with all offsets) goes first, then each tensor's
/// bytes in directory order through `write_tensor`. Nothing is held in memory but one tensor.
pub struct GgufWriter<W: Write> {
    out: W,
    specs: Vec<(TensorSpec, u64)>,
    next: usize,
    alignment: u64,
}

impl<W: Write> GgufWriter<W> {
    /// Write the header for these metadata pairs and tensors.
    pub fn new(mut out: W, metadata: &[(String, Value)], tensors: Vec<TensorSpec>) -> Result<Self> {
        let mut header = Vec::new();
        header.extend_from_slice(b"GGUF");
        header.extend_from_slice(&3u32.to_le_bytes());
        header.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        header.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
        for (k, v) in metadata {
            write_kv(&mut header, k, v);
        }
        let alignment = metadata.iter().find(|(k, _)| k == "general.alignment").and_then(|(_, v)| v.as_u64()).unwrap_or(DEFAULT_ALIGNMENT);
        let mut offset = 0u64;
        let mut specs = Vec::with_capacity(tensors.len());
        for t in tensors {
            let nbytes = TensorInfo::expected_bytes(&t.name, &t.shape, t.codec)?;
            let ty = t.codec.ggml_type().ok_or_else(|| invalid(format!("tensor '{}'", t.name), format!("codec {} has no GGUF type; write CMF instead", t.codec)))?;
            write_string(&mut header, &t.name);
            header.extend_from_slice(&(t.shape.len() as u32).to_le_bytes());
            for d in &t.shape {
                header.extend_from_slice(&d.to_le_bytes());
            }
            header.extend_from_slice(&ty.to_le_bytes());
            header.extend_from_slice(&offset.to_le_bytes());
            specs.push((t, nbytes));
            offset = align_up(offset + nbytes, alignment);
        }
        header.resize(align_up(header.len() as u64, alignment) as usize, 0);
        out.write_all(&header).map_err(|e| io_err("GGUF header", e))?;
        Ok(GgufWriter { out, specs, next: 0, alignment })
    }

    /// The next tensor the writer expects.
    pub fn next_spec(&self) -> Option<&TensorSpec> {
        self.specs.get(self.next).map(|(s, _)| s)
    }

    /// Write the next tensor's encoded bytes (must match its declared size).
    pub fn write_tensor(&mut self, data: &[u8]) -> Result<()> {
        let (spec, nbytes) = self.specs.get(self.next).ok_or_else(|| invalid("GGUF writer", "more tensors written than declared"))?;
        if data.len() as u64 != *nbytes {
            return Err(invalid(format!("tensor '{}'", spec.name), format!("expected {nbytes} bytes, got {}", data.len())));
        }
        self.out.write_all(data).map_err(|e| io_err(&spec.name, e))?;
        let pad = align_up(*nbytes, self.alignment) - nbytes;
        self.out.write_all(&vec![0u8; pad as usize]).map_err(|e| io_err(&spec.name, e))?;
        self.next += 1;
        Ok(())
    }

    /// Check every tensor was written and flush.
    pub fn finish(mut self) -> Result<W> {
        if self.next != self.specs.len() {
            return Err(invalid("GGUF writer", format!("{} of {} tensors written", self.next, self.specs.len())));
        }
        self.out.flush().map_err(|e| io_err("GGUF flush", e))?;
        Ok(self.out)
    }
}

fn io_err(what: &str, source: std::io::Error) -> FormatError {
    FormatError::Io { path: what.to_string(), source }
}
