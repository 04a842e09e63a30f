//! Typed errors for everything that reads a model file. Each names the problem.

use thiserror::Error;

/// A model file could not be read; the message names the field or tensor and what was wrong.
#[derive(Debug, Error)]
pub enum FormatError {
    #[error("I/O error on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("file is empty")]
    Empty,
    #[error("not a {expected} file: magic bytes {found:02x?}")]
    BadMagic { expected: &'static str, found: Vec<u8> },
    #[error("unsupported {format} version {found} (this build reads {supported})")]
    UnsupportedVersion { format: &'static str, found: u64, supported: &'static str },
    #[error("truncated file: reading {what} needs {needed} bytes at offset {offset}, file has {len}")]
    Truncated { what: String, offset: u64, needed: u64, len: u64 },
    #[error("{what}: count {count} is impossible for a file of {len} bytes")]
    AbsurdCount { what: String, count: u64, len: u64 },
    #[error("{what}: {detail}")]
    Invalid { what: String, detail: String },
    #[error("tensor '{tensor}': unknown codec id {id}")]
    UnknownCodec { tensor: String, id: u32 },
    #[error("tensor '{tensor}': GGML type {id} ({name}) is not one cortiq reads (it reads {reads})")]
    UnreadGgmlType { tensor: String, id: u32, name: &'static str, reads: String },
    #[error("tensor '{tensor}': shape {shape:?} overflows")]
    ShapeOverflow { tensor: String, shape: Vec<u64> },
    #[error("tensor '{tensor}': data [{start}, {end}) lies past the end of the data ({len} bytes)")]
    TensorOutOfBounds { tensor: String, start: u64, end: u64, len: u64 },
    #[error("tensors '{a}' and '{b}' overlap")]
    Overlap { a: String, b: String },
    #[error("tensor '{tensor}': checksum mismatch (stored {stored:016x}, computed {computed:016x})")]
    Checksum { tensor: String, stored: u64, computed: u64 },
    #[error("metadata key '{key}': {detail}")]
    Metadata { key: String, detail: String },
    #[error("tensor '{0}' not found")]
    MissingTensor(String),
}

pub type Result<T> = std::result::Result<T, FormatError>;

/// Shorthand for an `Invalid` error.
pub fn invalid(what: impl Into<String>, detail: impl Into<String>) -> FormatError {
    FormatError::Invalid { what: what.into(), detail: detail.into() }
}
