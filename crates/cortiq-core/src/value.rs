//! Typed metadata values (the GGUF value model, shared by CMF) and a bounds-checked byte
//! cursor: nothing is allocated from a length read out of a file before that length is
//! proven to fit in the bytes that remain.

use crate::error::{FormatError, Result};

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    Array(Vec<Value>),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// Nesting limit for arrays of arrays: a file cannot make the reader recurse without end.
const MAX_ARRAY_DEPTH: usize = 4;

impl Value {
    /// The GGUF type id of this value.
    pub fn type_id(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::Str(_) => 8,
            Value::Array(_) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }

    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v as u64),
            Value::U16(v) => Some(v as u64),
            Value::U32(v) => Some(v as u64),
            Value::U64(v) => Some(v),
            Value::I8(v) if v >= 0 => Some(v as u64),
            Value::I16(v) if v >= 0 => Some(v as u64),
            Value::I32(v) if v >= 0 => Some(v as u64),
            Value::I64(v) if v >= 0 => Some(v as u64),
            _ => None,
        }
    }

    /// The value as a float, if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// A short human rendering (arrays summarised), for `inspect`.
    pub fn summary(&self) -> String {
        match self {
            Value::Str(s) if s.chars().count() > 60 => {
                let head: String = s.chars().take(57).collect();
                format!("{:?}...", head)
            }
            Value::Str(s) => format!("{s:?}"),
            Value::Array(a) => {
                let kind = a.first().map(|v| type_name(v.type_id())).unwrap_or("empty");
                format!("[{kind}; {}]", a.len())
            }
            Value::F32(v) => format!("{v}"),
            Value::F64(v) => format!("{v}"),
            Value::Bool(v) => format!("{v}"),
            other => other.as_u64().map(|v| v.to_string()).unwrap_or_else(|| format!("{other:?}")).to_string(),
        }
    }
}

/// The name of a GGUF value type id.
pub fn type_name(id: u32) -> &'static str {
    match id {
        0 => "u8",
        1 => "i8",
        2 => "u16",
        3 => "i16",
        4 => "u32",
        5 => "i32",
        6 => "f32",
        7 => "bool",
        8 => "string",
        9 => "array",
        10 => "u64",
        11 => "i64",
        12 => "f64",
        _ => "unknown",
    }
}

/// The smallest encoded size of a value of this type (used to bound array counts).
fn min_encoded_size(id: u32) -> u64 {
    match id {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 | 10 | 11 | 12 => 8,
        9 => 12,
        _ => 1,
    }
}

/// A little-endian reader over a byte slice that checks every read against the end.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    /// Take `n` bytes or fail naming `what`.
    pub fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(FormatError::Truncated {
                what: what.to_string(),
                offset: self.pos as u64,
                needed: n,
                len: self.bytes.len() as u64,
            });
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let b = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    pub fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count of items each at least `min_size` bytes: rejected when the rest of the file
    /// could not hold that many (so a count of 2^62 never reaches an allocator).
    pub fn count(&mut self, what: &str, min_size: u64) -> Result<u64> {
        let count = self.u64(what)?;
        if count.saturating_mul(min_size.max(1)) > self.remaining() {
            return Err(FormatError::AbsurdCount {
                what: what.to_string(),
                count,
                len: self.bytes.len() as u64,
            });
        }
        Ok(count)
    }

    /// A u64-length-prefixed UTF-8 string.
    pub fn string(&mut self, what: &str) -> Result<String> {
        let len = self.count(&format!("{what} (string length)"), 1)?;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|e| FormatError::Invalid {
            what: what.to_string(),
            detail: format!("string is not valid UTF-8 ({e})"),
        })
    }

    /// A typed value of GGUF type `type_id`.
    pub fn value(&mut self, type_id: u32, what: &str) -> Result<Value> {
        self.value_at_depth(type_id, what, 0)
    }

    fn value_at_depth(&mut self, type_id: u32, what: &str, depth: usize) -> Result<Value> {
        Ok(match type_id {
            0 => Value::U8(self.u8(what)?),
            1 => Value::I8(self.u8(what)? as i8),
            2 => Value::U16(self.u16(what)?),
            3 => Value::I16(self.u16(what)? as i16),
            4 => Value::U32(self.u32(what)?),
            5 => Value::I32(self.u32(what)? as i32),
            6 => Value::F32(f32::from_bits(self.u32(what)?)),
            7 => match self.u8(what)? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    return Err(FormatError::Metadata { key: what.to_string(), detail: format!("bool byte {b} is neither 0 nor 1") })
                }
            },
            8 => Value::Str(self.string(what)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(FormatError::Metadata { key: what.to_string(), detail: format!("arrays nested deeper than {MAX_ARRAY_DEPTH}") });
                }
                let elem = self.u32(what)?;
                if elem > 12 {
                    return Err(FormatError::Metadata { key: what.to_string(), detail: format!("unknown array element type {elem}") });
                }
                let n = self.count(&format!("{what} (array length)"), min_encoded_size(elem))?;
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value_at_depth(elem, what, depth + 1)?);
                }
                Value::Array(items)
            }
            10 => Value::U64(self.u64(what)?),
            11 => Value::I64(self.u64(what)? as i64),
            12 => Value::F64(f64::from_bits(self.u64(what)?)),
            other => return Err(FormatError::Metadata { key: what.to_string(), detail: format!("unknown value type {other}") }),
        })
    }
}

/// Append the GGUF encoding of `s` (u64 length + bytes).
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Append the GGUF encoding of a value's payload (without its type id).
pub fn write_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(*x as u8),
        Value::Str(s) => write_string(out, s),
        Value::Array(items) => {
            let elem = items.first().map(|i| i.type_id()).unwrap_or(0);
            out.extend_from_slice(&elem.to_le_bytes());
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for i in items {
                write_value(out, i);
            }
        }
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

/// Append a whole key/value pair: key string, type id, payload.
pub fn write_kv(out: &mut Vec<u8>, key: &str, v: &Value) {
    write_string(out, key);
    out.extend_from_slice(&v.type_id().to_le_bytes());
    write_value(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let vals = vec![
            Value::U8(3),
            Value::I32(-5),
            Value::F32(1.5),
            Value::Bool(true),
            Value::Str("héllo".into()),
            Value::Array(vec![Value::Str("a".into()), Value::Str("bc".into())]),
            Value::Array(vec![Value::Array(vec![Value::U64(1)])]),
            Value::F64(-2.25),
        ];
        for v in vals {
            let mut buf = Vec::new();
            write_value(&mut buf, &v);
            let got = Cursor::new(&buf).value(v.type_id(), "t").unwrap();
            assert_eq!(got, v);
        }
    }

    #[test]
    fn huge_string_length_is_rejected_before_allocation() {
        let mut buf = (1u64 << 60).to_le_bytes().to_vec();
        buf.extend_from_slice(b"abc");
        let err = Cursor::new(&buf).string("general.name").unwrap_err();
        assert!(matches!(err, FormatError::AbsurdCount { .. }), "{err}");
    }

    #[test]
    fn huge_array_count_is_rejected() {
        let mut buf = 4u32.to_le_bytes().to_vec();
        buf.extend_from_slice(&(1u64 << 62).to_le_bytes());
        let err = Cursor::new(&buf).value(9, "arr").unwrap_err();
        assert!(err.to_string().contains("impossible"), "{err}");
    }

    #[test]
    fn deep_nesting_is_rejected() {
        let mut buf = Vec::new();
        for _ in 0..10 {
            buf.extend_from_slice(&9u32.to_le_bytes());
            buf.extend_from_slice(&1u64.to_le_bytes());
        }
        let err = Cursor::new(&buf).value(9, "nest");
        assert!(err.is_err());
    }
}
