//! CMF, cortiq's own container: mmap-loaded, zero-copy, every tensor checksummed.
//!
//! | bytes | field |
//! | --- | --- |
//! | 4 | magic `CMF\0` |
//! | 4 | u32 version (1) |
//! | 8 | u64 header length H (bytes after this field up to the end of the directory) |
//! | .. | u64 metadata count, then GGUF-encoded key/value pairs |
//! | .. | u64 tensor count, then per tensor: name, u32 ndim, u64 dims (ggml order), u32 codec id, u64 offset (from data start), u64 bytes, u64 xxh3-64 checksum |
//! | .. | zero padding to a multiple of 64 |
//! | .. | tensor payloads, each 64-byte aligned |

use crate::codec::Codec;
use crate::error::{invalid, FormatError, Result};
use crate::gguf::align_up;
use crate::model_file::{check_layout, TensorInfo};
use crate::value::{write_kv, write_string, Cursor, Value};
use std::io::{Seek, SeekFrom, Write};

pub const MAGIC: &[u8; 4] = b"CMF\0";
pub const VERSION: u32 = 1;
/// Payload alignment: one cache line, and enough for any SIMD or GPU upload path.
pub const ALIGN: u64 = 64;

/// Content checksum stored per tensor.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

#[derive(Debug)]
pub struct Parsed {
    pub version: u32,
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
}

/// Parse and validate a whole CMF file held in memory. Checksums are checked by
/// `ModelFile::verify_checksums` (on demand: it reads every byte).
pub fn parse(bytes: &[u8]) -> Result<Parsed> {
    if bytes.is_empty() {
        return Err(FormatError::Empty);
    }
    let mut c = Cursor::new(bytes);
    let magic = c.take(4, "magic")?;
    if magic != MAGIC {
        return Err(FormatError::BadMagic { expected: "CMF", found: magic.to_vec() });
    }
    let version = c.u32("version")?;
    if version != VERSION {
        return Err(FormatError::UnsupportedVersion { format: "CMF", found: version as u64, supported: "1" });
    }
    let header_len = c.u64("header length")?;
    if header_len > c.remaining() {
        return Err(FormatError::Truncated { what: "CMF header".into(), offset: 16, needed: header_len, len: bytes.len() as u64 });
    }
    let header_end = 16 + header_len;
    let mut h = Cursor::new(&bytes[16..header_end as usize]);
    let kv_count = h.count("metadata count", 13)?;
    let mut metadata = Vec::with_capacity(kv_count as usize);
    for i in 0..kv_count {
        let key = h.string(&format!("metadata key #{i}"))?;
        let ty = h.u32(&format!("type of metadata '{key}'"))?;
        let value = h.value(ty, &key)?;
        metadata.push((key, value));
    }
    // Smallest entry: name (8) + ndim (4) + codec (4) + offset, bytes, checksum (24).
    let tensor_count = h.count("tensor count", 40)?;
    let data_start = align_up(header_end, ALIGN);
    let mut tensors = Vec::with_capacity(tensor_count as usize);
    for i in 0..tensor_count {
        let name = h.string(&format!("tensor #{i} name"))?;
        let ndim = h.u32(&format!("tensor '{name}' dimension count"))?;
        if ndim == 0 || ndim > 8 {
            return Err(invalid(format!("tensor '{name}'"), format!("{ndim} dimensions (expected 1..=8)")));
        }
        let mut shape = Vec::with_capacity(ndim as usize);
        for _ in 0..ndim {
            shape.push(h.u64(&format!("tensor '{name}' shape"))?);
        }
        let id = h.u32(&format!("tensor '{name}' codec"))?;
        let codec = Codec::from_cmf_id(id).ok_or(FormatError::UnknownCodec { tensor: name.clone(), id })?;
        let offset = h.u64(&format!("tensor '{name}' offset"))?;
        let nbytes = h.u64(&format!("tensor '{name}' byte size"))?;
        let sum = h.u64(&format!("tensor '{name}' checksum"))?;
        let expected = TensorInfo::expected_bytes(&name, &shape, codec)?;
        if nbytes != expected {
            return Err(invalid(format!("tensor '{name}'"), format!("byte size {nbytes} does not match shape {shape:?} in {codec} ({expected} bytes)")));
        }
        if offset % ALIGN != 0 {
            return Err(invalid(format!("tensor '{name}'"), format!("offset {offset} is not {ALIGN}-byte aligned")));
        }
        let abs = data_start.checked_add(offset).ok_or_else(|| FormatError::TensorOutOfBounds { tensor: name.clone(), start: offset, end: u64::MAX, len: 0 })?;
        tensors.push(TensorInfo { name, shape, codec, offset: abs, nbytes, file: 0, checksum: Some(sum) });
    }
    if h.remaining() != 0 {
        return Err(invalid("CMF header", format!("{} unexplained bytes after the tensor directory", h.remaining())));
    }
    check_layout(&tensors, data_start, bytes.len() as u64)?;
    Ok(Parsed { version, metadata, tensors })
}

/// One tensor to write.
#[derive(Debug, Clone)]
pub struct CmfTensor {
    pub name: String,
    pub shape: Vec<u64>,
    pub codec: Codec,
}

/// Streaming CMF writer: reserves the header, streams payloads, then seeks back to fill
/// in the checksums. Memory use is one tensor at a time.
pub struct CmfWriter<W: Write + Seek> {
    out: W,
    metadata: Vec<(String, Value)>,
    /// (tensor, offset from data start, byte size)
    specs: Vec<(CmfTensor, u64, u64)>,
    sums: Vec<u64>,
}

impl<W: Write + Seek> CmfWriter<W> {
    /// Lay out the directory and reserve the header (checksums are filled in by `finish`).
    pub fn new(mut out: W, metadata: Vec<(String, Value)>, tensors: Vec<CmfTensor>) -> Result<Self> {
        let mut offset = 0;
        let mut specs = Vec::with_capacity(tensors.len());
        for t in tensors {
            let nbytes = TensorInfo::expected_bytes(&t.name, &t.shape, t.codec)?;
            specs.push((t, offset, nbytes));
            offset = align_up(offset + nbytes, ALIGN);
        }
        let header = encode_header(&metadata, &specs, &[]);
        out.write_all(&header).map_err(|e| io_err("CMF header", e))?;
        Ok(CmfWriter { out, metadata, specs, sums: Vec::new() })
    }

    /// The next tensor the writer expects.
    pub fn next_spec(&self) -> Option<&CmfTensor> {
        self.specs.get(self.sums.len()).map(|(t, _, _)| t)
    }

    /// Write the next tensor's encoded bytes (must match its declared size).
    pub fn write_tensor(&mut self, data: &[u8]) -> Result<()> {
        let (t, _, nbytes) = self.specs.get(self.sums.len()).ok_or_else(|| invalid("CMF writer", "more tensors written than declared"))?;
        if data.len() as u64 != *nbytes {
            return Err(invalid(format!("tensor '{}'", t.name), format!("expected {nbytes} bytes, got {}", data.len())));
        }
        let pad = align_up(*nbytes, ALIGN) - nbytes;
        self.out.write_all(data).map_err(|e| io_err(&t.name, e))?;
        self.out.write_all(&vec![0u8; pad as usize]).map_err(|e| io_err(&t.name, e))?;
        self.sums.push(checksum(data));
        Ok(())
    }

    /// Fill in the checksums and flush; every declared tensor must have been written.
    pub fn finish(mut self) -> Result<W> {
        if self.sums.len() != self.specs.len() {
            return Err(invalid("CMF writer", format!("{} of {} tensors written", self.sums.len(), self.specs.len())));
        }
        let header = encode_header(&self.metadata, &self.specs, &self.sums);
        self.out.seek(SeekFrom::Start(0)).map_err(|e| io_err("CMF header", e))?;
        self.out.write_all(&header).map_err(|e| io_err("CMF header", e))?;
        self.out.seek(SeekFrom::End(0)).map_err(|e| io_err("CMF header", e))?;
        self.out.flush().map_err(|e| io_err("CMF flush", e))?;
        Ok(self.out)
    }
}

/// The header bytes up to the data start (padded); missing checksums are written as 0,
/// which keeps the length identical so the header can be rewritten in place.
fn encode_header(metadata: &[(String, Value)], specs: &[(CmfTensor, u64, u64)], sums: &[u64]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (k, v) in metadata {
        write_kv(&mut body, k, v);
    }
    body.extend_from_slice(&(specs.len() as u64).to_le_bytes());
    for (i, (t, offset, nbytes)) in specs.iter().enumerate() {
        write_string(&mut body, &t.name);
        body.extend_from_slice(&(t.shape.len() as u32).to_le_bytes());
        for d in &t.shape {
            body.extend_from_slice(&d.to_le_bytes());
        }
        body.extend_from_slice(&t.codec.cmf_id().to_le_bytes());
        body.extend_from_slice(&offset.to_le_bytes());
        body.extend_from_slice(&nbytes.to_le_bytes());
        body.extend_from_slice(&sums.get(i).copied().unwrap_or(0).to_le_bytes());
    }
    let mut out = Vec::with_capacity(body.len() + 80);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out.resize(align_up(out.len() as u64, ALIGN) as usize, 0);
    out
}

fn io_err(what: &str, source: std::io::Error) -> FormatError {
    FormatError::Io { path: what.to_string(), source }
}
