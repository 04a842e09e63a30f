//! GGUF / CMF / safetensors parsing, the GGUF -> CMF round trip, and crafted bad files.

use cortiq_core::cmf::{CmfTensor, CmfWriter};
use cortiq_core::gguf::{self, GgufWriter, TensorSpec};
use cortiq_core::rng::SplitMix64;
use cortiq_core::{Codec, FormatError, ModelFile, Value};
use std::io::Cursor;

fn sample_tensors() -> Vec<(TensorSpec, Vec<u8>)> {
    let mut rng = SplitMix64::fresh();
    let mut out = Vec::new();
    for (i, (codec, cols, rows)) in [(Codec::F32, 7u64, 3u64), (Codec::Q4_0, 64, 5), (Codec::Q4_1, 96, 3), (Codec::Q8_0, 32, 9), (Codec::Q6K, 256, 2), (Codec::F16, 33, 1)]
        .into_iter()
        .enumerate()
    {
        let mut bytes = Vec::new();
        for _ in 0..rows {
            bytes.extend(codec.pack_row(&rng.normals(cols as usize, 1.0)).unwrap());
        }
        out.push((TensorSpec { name: format!("t{i}.{codec}"), shape: vec![cols, rows], codec }, bytes));
    }
    out
}

fn sample_metadata() -> Vec<(String, Value)> {
    vec![
        ("general.architecture".into(), Value::Str("llama".into())),
        ("llama.block_count".into(), Value::U32(2)),
        ("tokenizer.ggml.tokens".into(), Value::Array(vec![Value::Str("a".into()), Value::Str("b".into())])),
        ("some.float".into(), Value::F32(0.5)),
    ]
}

fn write_gguf(tensors: &[(TensorSpec, Vec<u8>)]) -> Vec<u8> {
    let mut w = GgufWriter::new(Vec::new(), &sample_metadata(), tensors.iter().map(|(s, _)| s.clone()).collect()).unwrap();
    for (_, b) in tensors {
        w.write_tensor(b).unwrap();
    }
    w.finish().unwrap()
}

fn write_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn gguf_written_then_parsed_gives_the_same_tensors_and_metadata() {
    let tensors = sample_tensors();
    let bytes = write_gguf(&tensors);
    let parsed = gguf::parse(&bytes).unwrap();
    assert_eq!(parsed.version, 3);
    assert_eq!(parsed.metadata, sample_metadata());
    assert_eq!(parsed.tensors.len(), tensors.len());
    for (t, (spec, data)) in parsed.tensors.iter().zip(&tensors) {
        assert_eq!(t.name, spec.name);
        assert_eq!(t.shape, spec.shape);
        assert_eq!(t.codec, spec.codec);
        assert_eq!(t.offset % 32, 0);
        assert_eq!(&bytes[t.offset as usize..(t.offset + t.nbytes) as usize], &data[..]);
    }
}

#[test]
fn gguf_to_cmf_round_trip_is_bit_exact_and_checksummed() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = sample_tensors();
    let src = ModelFile::open(write_file(&dir, "m.gguf", &write_gguf(&tensors))).unwrap();
    let cmf_path = dir.path().join("m.cmf");
    let specs = src.tensors.iter().map(|t| CmfTensor { name: t.name.clone(), shape: t.shape.clone(), codec: t.codec }).collect();
    let mut w = CmfWriter::new(std::fs::File::create(&cmf_path).unwrap(), src.metadata.clone(), specs).unwrap();
    for t in &src.tensors {
        w.write_tensor(src.tensor_data(t)).unwrap();
    }
    w.finish().unwrap();
    let back = ModelFile::open(&cmf_path).unwrap();
    back.verify_checksums().unwrap();
    assert_eq!(back.metadata, src.metadata);
    for t in &src.tensors {
        let (bt, bytes) = back.get(&t.name).unwrap();
        assert_eq!((bt.shape.clone(), bt.codec), (t.shape.clone(), t.codec));
        assert_eq!(bt.offset % 64, 0);
        assert_eq!(bytes, src.tensor_data(t), "{}", t.name);
    }
    // A flipped payload byte is caught by the checksum.
    let mut raw = std::fs::read(&cmf_path).unwrap();
    let last = back.tensors.last().unwrap();
    raw[last.offset as usize] ^= 0xFF;
    let bad = ModelFile::open(write_file(&dir, "flipped.cmf", &raw)).unwrap();
    assert!(matches!(bad.verify_checksums(), Err(FormatError::Checksum { .. })));
}

/// A byte-level GGUF builder for crafting malformed files.
struct Craft {
    bytes: Vec<u8>,
}

impl Craft {
    fn header(version: u32, tensors: u64, kvs: u64) -> Craft {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&tensors.to_le_bytes());
        bytes.extend_from_slice(&kvs.to_le_bytes());
        Craft { bytes }
    }
    fn str(mut self, s: &str) -> Self {
        self.bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(s.as_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Self {
        self.bytes.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn tensor(self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Self {
        let mut c = self.str(name).u32(dims.len() as u32);
        for &d in dims {
            c = c.u64(d);
        }
        c.u32(ty).u64(offset)
    }
    fn pad_and_data(mut self, data: usize) -> Vec<u8> {
        self.bytes.resize(self.bytes.len().div_ceil(32) * 32 + data, 0);
        self.bytes
    }
}

fn parse_err(bytes: &[u8]) -> String {
    match gguf::parse(bytes) {
        Ok(_) => panic!("malformed file was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn crafted_bad_gguf_files_get_errors_that_name_the_problem() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty"),
        ("truncated header", b"GGUF\x03\x00".to_vec(), "truncated"),
        ("wrong magic", b"GGML\x03\x00\x00\x00".to_vec(), "magic"),
        ("unknown version", Craft::header(9, 0, 0).bytes, "version 9"),
        ("tensor count 2^62", Craft::header(3, 1 << 62, 0).bytes, "tensor count"),
        ("metadata count 2^62", Craft::header(3, 0, 1 << 62).bytes, "metadata count"),
        ("string length 2^60", Craft::header(3, 0, 1).u64(1 << 60).u64(0).bytes, "string length"),
        ("value string 2^60", Craft::header(3, 0, 1).str("k").u32(8).u64(1 << 60).bytes, "string length"),
        ("unknown value type", Craft::header(3, 0, 1).str("k").u32(77).u64(0).bytes, "unknown value type"),
        ("unknown codec", Craft::header(3, 1, 0).tensor("w", &[32, 1], 99, 0).pad_and_data(64), "GGML type 99 (unknown) is not one cortiq reads"),
        ("unread codec", Craft::header(3, 1, 0).tensor("blk.0.attn_q.weight", &[256, 1], 16, 0).pad_and_data(128), "tensor 'blk.0.attn_q.weight': GGML type 16 (IQ2_XXS) is not one cortiq reads (it reads F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16)"),
        ("offset past end", Craft::header(3, 1, 0).tensor("w", &[32, 1], 0, 1 << 20).pad_and_data(128), "past the end"),
        ("truncated data", Craft::header(3, 1, 0).tensor("w", &[32, 4], 0, 0).pad_and_data(100), "past the end"),
        (
            "overlapping tensors",
            Craft::header(3, 2, 0).tensor("a", &[32, 2], 0, 0).tensor("b", &[32, 1], 0, 128).pad_and_data(512),
            "overlap",
        ),
        ("shape overflow", Craft::header(3, 1, 0).tensor("w", &[32, 1 << 40, 1 << 40], 0, 0).pad_and_data(64), "overflows"),
        ("ragged quant row", Craft::header(3, 1, 0).tensor("w", &[33, 1], 8, 0).pad_and_data(64), "not a multiple"),
        ("misaligned offset", Craft::header(3, 1, 0).tensor("w", &[4, 1], 0, 3).pad_and_data(64), "alignment"),
        ("zero dims", Craft::header(3, 1, 0).str("w").u32(0).u32(0).u64(0).pad_and_data(64), "dimensions"),
        (
            "duplicate names",
            Craft::header(3, 2, 0).tensor("w", &[4, 1], 0, 0).tensor("w", &[4, 1], 0, 32).pad_and_data(64),
            "twice",
        ),
        ("bad alignment", Craft::header(3, 0, 1).str("general.alignment").u32(4).u32(3).bytes, "power of two"),
    ];
    for (what, bytes, needle) in cases {
        let msg = parse_err(&bytes);
        assert!(msg.to_lowercase().contains(&needle.to_lowercase()), "{what}: error {msg:?} does not mention {needle:?}");
    }
}

#[test]
fn every_truncation_of_a_valid_file_is_an_error_never_a_panic() {
    let bytes = write_gguf(&sample_tensors());
    let parsed = gguf::parse(&bytes).unwrap();
    let end = parsed.tensors.iter().map(|t| t.offset + t.nbytes).max().unwrap() as usize;
    for cut in (0..end).step_by(7) {
        assert!(gguf::parse(&bytes[..cut]).is_err(), "prefix of {cut} bytes accepted");
    }
}

#[test]
fn crafted_bad_cmf_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let tensors = sample_tensors();
    let src = ModelFile::open(write_file(&dir, "m.gguf", &write_gguf(&tensors))).unwrap();
    let specs = src.tensors.iter().map(|t| CmfTensor { name: t.name.clone(), shape: t.shape.clone(), codec: t.codec }).collect();
    let mut w = CmfWriter::new(Cursor::new(Vec::new()), src.metadata.clone(), specs).unwrap();
    for t in &src.tensors {
        w.write_tensor(src.tensor_data(t)).unwrap();
    }
    let good = w.finish().unwrap().into_inner();
    let parsed = cortiq_core::cmf::parse(&good).unwrap();
    let end = parsed.tensors.iter().map(|t| t.offset + t.nbytes).max().unwrap() as usize;
    for cut in (0..end).step_by(13) {
        assert!(cortiq_core::cmf::parse(&good[..cut]).is_err(), "CMF prefix of {cut} bytes accepted");
    }
    let mut bad_version = good.clone();
    bad_version[4] = 7;
    assert!(cortiq_core::cmf::parse(&bad_version).unwrap_err().to_string().contains("version 7"));
    let mut huge_header = good.clone();
    huge_header[8..16].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert!(cortiq_core::cmf::parse(&huge_header).unwrap_err().to_string().contains("truncated"));
    assert!(matches!(cortiq_core::cmf::parse(b""), Err(FormatError::Empty)));
}

#[test]
fn model_file_open_names_unknown_formats() {
    let dir = tempfile::tempdir().unwrap();
    let err = ModelFile::open(write_file(&dir, "x.bin", b"PK\x03\x04junk")).err().unwrap().to_string();
    assert!(err.contains("magic"), "{err}");
    let err = ModelFile::open(write_file(&dir, "e.gguf", b"")).err().unwrap().to_string();
    assert!(err.contains("empty"), "{err}");
    let err = ModelFile::open(dir.path().join("missing.gguf")).err().unwrap().to_string();
    assert!(err.contains("missing.gguf"), "{err}");
}

#[test]
fn safetensors_directory_reads_tensors_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let w: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    let wbytes: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let hb: Vec<u8> = (0..4).flat_map(|i| half::bf16::from_f32(i as f32).to_le_bytes()).collect();
    let view_a = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![3, 4], &wbytes).unwrap();
    let view_b = safetensors::tensor::TensorView::new(safetensors::Dtype::BF16, vec![4], &hb).unwrap();
    let data = safetensors::serialize([("model.layers.0.self_attn.q_proj.weight", view_a), ("model.norm.weight", view_b)], None).unwrap();
    std::fs::write(dir.path().join("model.safetensors"), data).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type":"llama","hidden_size":4,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"rope_theta":10000.0,"rms_norm_eps":1e-5,"vocab_size":10}"#,
    )
    .unwrap();
    let m = ModelFile::open(dir.path()).unwrap();
    assert_eq!(m.architecture(), "llama");
    assert_eq!(m.meta_u64("llama.attention.head_count_kv"), Some(1));
    let (t, bytes) = m.get("blk.0.attn_q.weight").unwrap();
    assert_eq!((t.shape.clone(), t.codec), (vec![4, 3], Codec::F32));
    let mut row = vec![0f32; 4];
    t.codec.unpack_row(&bytes[16..32], &mut row).unwrap();
    assert_eq!(row, vec![2.0, 2.5, 3.0, 3.5]);
    let (n, nb) = m.get("output_norm.weight").unwrap();
    let mut v = vec![0f32; 4];
    n.codec.unpack_row(nb, &mut v).unwrap();
    assert_eq!(v, vec![0.0, 1.0, 2.0, 3.0]);
    std::fs::write(dir.path().join("model.safetensors"), b"\xff\xff\xff\xff\xff\xff\xff\x7fjunk").unwrap();
    assert!(ModelFile::open(dir.path()).is_err());
}

/// A file written by gguf-py (llama.cpp's own Python writer, not ours): committed as the
/// fuzzing seed, read here value by value.
#[test]
fn reads_a_gguf_written_by_gguf_py() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/gguf/small.gguf");
    let m = ModelFile::open(path).unwrap();
    assert_eq!(m.architecture(), "llama");
    assert_eq!(m.meta_u64("x.u32"), Some(7));
    assert_eq!(m.meta_str("x.s"), Some("hello"));
    let (a, bytes) = m.get("a").unwrap();
    assert_eq!((a.shape.clone(), a.codec), (vec![32, 1], Codec::F32));
    let mut row = vec![0f32; 32];
    a.codec.unpack_row(bytes, &mut row).unwrap();
    assert_eq!(row, (0..32).map(|i| i as f32).collect::<Vec<_>>());
    let (c, cb) = m.get("c").unwrap();
    assert_eq!(c.codec, Codec::Q8_0);
    let mut q = vec![0f32; 64];
    c.codec.unpack_row(cb, &mut q).unwrap();
    for (i, v) in q.iter().enumerate() {
        let want = -1.0 + 2.0 * i as f32 / 63.0;
        assert!((v - want).abs() < 0.01, "{i}: {v} vs {want}");
    }
}

/// Every input the fuzzers kept (fuzz/seeds) parses to Ok or an error, never a panic.
#[test]
fn fuzz_corpus_never_panics() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds");
    let mut n = 0;
    for (dir, parse) in [("gguf", (|b: &[u8]| gguf::parse(b).is_ok()) as fn(&[u8]) -> bool), ("cmf", |b: &[u8]| cortiq_core::cmf::parse(b).is_ok())] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            let _ = parse(&bytes);
            n += 1;
        }
    }
    assert!(n > 2, "the corpus is committed");
}
