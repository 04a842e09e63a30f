//! One view over every model format: metadata, tensor directory and zero-copy tensor bytes
//! from memory-mapped files (GGUF, CMF, or a safetensors directory).

use crate::codec::Codec;
use crate::error::{invalid, FormatError, Result};
use crate::value::Value;
use memmap2::Mmap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a tensor lives and how it is encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml order: `shape[0]` is the row length (columns), the rest count rows.
    pub shape: Vec<u64>,
    pub codec: Codec,
    /// Byte offset of the first byte inside the mapped file `file`.
    pub offset: u64,
    pub nbytes: u64,
    /// Index into the model's mapped files (always 0 except for sharded safetensors).
    pub file: usize,
    /// CMF's stored xxh3-64 of the bytes, when the format carries one.
    pub checksum: Option<u64>,
}

impl TensorInfo {
    /// Values per row.
    pub fn cols(&self) -> u64 {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Number of rows (product of all dimensions but the first).
    pub fn rows(&self) -> u64 {
        self.shape.iter().skip(1).product()
    }

    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Validate the shape against the codec and return the byte size, naming the tensor on error.
    pub fn expected_bytes(name: &str, shape: &[u64], codec: Codec) -> Result<u64> {
        let overflow = || FormatError::ShapeOverflow { tensor: name.to_string(), shape: shape.to_vec() };
        let mut rows: u64 = 1;
        for &d in shape.iter().skip(1) {
            rows = rows.checked_mul(d).ok_or_else(overflow)?;
        }
        let cols = shape.first().copied().unwrap_or(1);
        let row = codec.row_bytes(cols).ok_or_else(|| {
            if cols % codec.block_len() as u64 != 0 {
                invalid(format!("tensor '{name}'"), format!("row length {cols} is not a multiple of the {codec} block ({})", codec.block_len()))
            } else {
                overflow()
            }
        })?;
        row.checked_mul(rows).ok_or_else(overflow)
    }
}

/// The container a model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Gguf { version: u32 },
    Cmf { version: u32 },
    Safetensors,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Format::Gguf { version } => write!(f, "GGUF v{version}"),
            Format::Cmf { version } => write!(f, "CMF v{version}"),
            Format::Safetensors => write!(f, "safetensors"),
        }
    }
}

/// An opened model: mapped files, metadata in file order, and the tensor directory.
pub struct ModelFile {
    pub path: PathBuf,
    pub format: Format,
    pub metadata: Vec<(String, Value)>,
    pub tensors: Vec<TensorInfo>,
    maps: Vec<Mmap>,
    meta_index: HashMap<String, usize>,
    tensor_index: HashMap<String, usize>,
}

/// Memory-map a whole file read-only.
pub(crate) fn map_file(path: &Path) -> Result<Mmap> {
    let io = |source| FormatError::Io { path: path.display().to_string(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    // SAFETY: the map is read-only; cortiq never writes model files it has mapped. A file
    // truncated by another process while mapped is outside what any mmap reader can defend.
    unsafe { Mmap::map(&file) }.map_err(io)
}

impl ModelFile {
    /// Open a GGUF or CMF file (by magic) or a safetensors directory / file.
    pub fn open(path: impl AsRef<Path>) -> Result<ModelFile> {
        let path = path.as_ref();
        if path.is_dir() || path.extension().is_some_and(|e| e == "safetensors") {
            return crate::safetensors_dir::open(path);
        }
        let map = map_file(path)?;
        if map.is_empty() {
            return Err(FormatError::Empty);
        }
        match map.get(0..4) {
            Some(b"GGUF") => {
                let parsed = crate::gguf::parse(&map)?;
                Ok(ModelFile::new(path, Format::Gguf { version: parsed.version }, parsed.metadata, parsed.tensors, vec![map]))
            }
            Some(m) if m == crate::cmf::MAGIC => {
                let parsed = crate::cmf::parse(&map)?;
                Ok(ModelFile::new(path, Format::Cmf { version: parsed.version }, parsed.metadata, parsed.tensors, vec![map]))
            }
            other => Err(FormatError::BadMagic { expected: "GGUF or CMF", found: other.unwrap_or(&map[..]).to_vec() }),
        }
    }

    pub(crate) fn new(path: &Path, format: Format, metadata: Vec<(String, Value)>, tensors: Vec<TensorInfo>, maps: Vec<Mmap>) -> ModelFile {
        let meta_index = metadata.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
        let tensor_index = tensors.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
        ModelFile { path: path.to_path_buf(), format, metadata, tensors, maps, meta_index, tensor_index }
    }

    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.meta_index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn meta_u64(&self, key: &str) -> Option<u64> {
        self.meta(key).and_then(Value::as_u64)
    }

    pub fn meta_f64(&self, key: &str) -> Option<f64> {
        self.meta(key).and_then(Value::as_f64)
    }

    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta(key).and_then(Value::as_str)
    }

    /// `general.architecture`, or "unknown".
    pub fn architecture(&self) -> &str {
        self.meta_str("general.architecture").unwrap_or("unknown")
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// The tensor's encoded bytes, zero-copy from the map.
    pub fn tensor_data(&self, t: &TensorInfo) -> &[u8] {
        &self.maps[t.file][t.offset as usize..(t.offset + t.nbytes) as usize]
    }

    /// Look a tensor up by name and return its info and bytes.
    pub fn get(&self, name: &str) -> Result<(&TensorInfo, &[u8])> {
        let t = self.tensor(name).ok_or_else(|| FormatError::MissingTensor(name.to_string()))?;
        Ok((t, self.tensor_data(t)))
    }

    /// Total bytes of the mapped files.
    pub fn file_size(&self) -> u64 {
        self.maps.iter().map(|m| m.len() as u64).sum()
    }

    /// Recompute every stored checksum (CMF); the first mismatch is an error.
    pub fn verify_checksums(&self) -> Result<()> {
        for t in &self.tensors {
            if let Some(stored) = t.checksum {
                let computed = crate::cmf::checksum(self.tensor_data(t));
                if computed != stored {
                    return Err(FormatError::Checksum { tensor: t.name.clone(), stored, computed });
                }
            }
        }
        Ok(())
    }
}

/// Check a tensor directory: every tensor inside `data_len` bytes from `data_start` and no
/// two tensors overlapping. Offsets in `tensors` are absolute; names must be unique.
pub(crate) fn check_layout(tensors: &[TensorInfo], data_start: u64, file_len: u64) -> Result<()> {
    let mut seen = HashMap::new();
    for t in tensors {
        if seen.insert(t.name.as_str(), ()).is_some() {
            return Err(invalid(format!("tensor '{}'", t.name), "name appears twice in the directory"));
        }
        let end = t.offset.checked_add(t.nbytes).ok_or_else(|| FormatError::ShapeOverflow { tensor: t.name.clone(), shape: t.shape.clone() })?;
        if t.offset < data_start || end > file_len {
            return Err(FormatError::TensorOutOfBounds {
                tensor: t.name.clone(),
                start: t.offset.saturating_sub(data_start),
                end: end.saturating_sub(data_start),
                len: file_len.saturating_sub(data_start),
            });
        }
    }
    let mut order: Vec<&TensorInfo> = tensors.iter().filter(|t| t.nbytes > 0).collect();
    order.sort_by_key(|t| t.offset);
    for w in order.windows(2) {
        if w[0].offset + w[0].nbytes > w[1].offset {
            return Err(FormatError::Overlap { a: w[0].name.clone(), b: w[1].name.clone() });
        }
    }
    Ok(())
}
