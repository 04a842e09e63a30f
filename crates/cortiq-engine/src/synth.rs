//! `cortiq synth SHAPE --codec C -o FILE.gguf [--seed S]`: a llama-architecture GGUF (or,
//! for the `gemma3-270m` shape, a Gemma 3 one) with random weights (normal, std 0.02; norms
//! 1, Gemma's q/k and sandwich norms 1 + normal, std 0.1) and a complete byte-level BPE
//! vocabulary, so cortiq and llama.cpp's tools both load it. Streams one tensor at a time to
//! disk, rows generated in parallel from per-row seeds: deterministic for a seed, bounded
//! memory.
//! `--codec` names one codec for every matrix, or `q4_k_m` / `q5_k_m`: llama.cpp's Q4_K_M or
//! Q5_K_M mix.

use anyhow::{bail, Context, Result};
use cortiq_core::gguf::{GgufWriter, TensorSpec};
use cortiq_core::rng::SplitMix64;
use cortiq_core::{Codec, Value};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::io::BufWriter;
use std::path::Path;

/// A named model geometry.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub name: &'static str,
    pub hidden: u64,
    pub ffn: u64,
    pub layers: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub vocab: u64,
    pub tied: bool,
    pub ctx: u64,
    pub rope_base: f32,
    /// Width of a head (hidden / heads in the llama shapes).
    pub head_dim: u64,
    /// Gemma 3's block (architecture `gemma3`: q/k and sandwich norms, GELU, sliding-window
    /// layers of `GEMMA_WINDOW` positions) instead of llama's.
    pub gemma: bool,
}

/// The sliding window of a synthesized Gemma 3 model's local layers (gemma-3-270m's).
const GEMMA_WINDOW: u32 = 512;

pub const SHAPES: &[Shape] = &[
    Shape { name: "tiny", hidden: 256, ffn: 512, layers: 2, heads: 4, kv_heads: 2, vocab: 2048, tied: true, ctx: 2048, rope_base: 10000.0, head_dim: 64, gemma: false },
    // An embedding wider than a CUDA row kernel stages in one round of loads (4096 values),
    // for the parity tests.
    Shape { name: "tiny-wide", hidden: 5120, ffn: 1024, layers: 2, heads: 40, kv_heads: 8, vocab: 2048, tied: true, ctx: 2048, rope_base: 10000.0, head_dim: 128, gemma: false },
    Shape { name: "smollm2-135m", hidden: 576, ffn: 1536, layers: 30, heads: 9, kv_heads: 3, vocab: 49152, tied: true, ctx: 8192, rope_base: 100000.0, head_dim: 64, gemma: false },
    Shape { name: "smollm2-360m", hidden: 960, ffn: 2560, layers: 32, heads: 15, kv_heads: 5, vocab: 49152, tied: true, ctx: 8192, rope_base: 100000.0, head_dim: 64, gemma: false },
    Shape { name: "llama-1b", hidden: 2048, ffn: 8192, layers: 16, heads: 32, kv_heads: 8, vocab: 128256, tied: true, ctx: 8192, rope_base: 500000.0, head_dim: 64, gemma: false },
    // gemma-3-270m's geometry (a head 256 wide, one KV head).
    Shape { name: "gemma3-270m", hidden: 640, ffn: 2048, layers: 18, heads: 4, kv_heads: 1, vocab: 262144, tied: true, ctx: 32768, rope_base: 1_000_000.0, head_dim: 256, gemma: true },
    Shape { name: "llama-8b", hidden: 4096, ffn: 14336, layers: 32, heads: 32, kv_heads: 8, vocab: 128256, tied: false, ctx: 8192, rope_base: 500000.0, head_dim: 128, gemma: false },
];

/// Weight standard deviation of every matrix.
const WEIGHT_STD: f32 = 0.02;
/// The spread of the Gemma block's q/k and sandwich norm weights around 1.
const NORM_STD: f32 = 0.1;

/// The weights of norm tensor `name` (`cols` values): 1 for the layers' input norms and the
/// output norm (the noise-floor tests move one of them by an ulp, tests/int8_noise.rs, and
/// measure the int8 path's amplification of it from there), 1 + normal(NORM_STD) for the
/// Gemma block's q/k and sandwich norms, so a test tells each of those from the others.
fn norm_weights(name: &str, cols: usize, seed: u64) -> Vec<f32> {
    if ["attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm"].iter().any(|n| name.contains(n)) {
        SplitMix64::new(seed).normals(cols, NORM_STD).into_iter().map(|v| 1.0 + v).collect()
    } else {
        vec![1.0; cols]
    }
}

/// Which codec each matrix gets: one for all, or a llama.cpp file-type mix.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Recipe {
    Uniform(Codec),
    /// `LLAMA_FTYPE_MOSTLY_Q4_K_M` as `llama_tensor_get_type` (llama-quant.cpp) picks it for
    /// a dense llama: Q4_K, with Q6_K for the head (the embedding too when tied) and for
    /// attn_v and ffn_down in the layers `more_bits` names; a matrix whose rows are not whole
    /// 256-value superblocks falls back (Q4_K to Q5_0, Q6_K to Q8_0; the head to Q8_0).
    Q4KM,
    /// `LLAMA_FTYPE_MOSTLY_Q5_K_M`: the same choices with Q5_K where Q4_K_M has Q4_K, and
    /// Q5_1 where it has Q5_0.
    Q5KM,
}

impl Recipe {
    fn parse(name: &str) -> Result<Recipe> {
        if name.eq_ignore_ascii_case("q4_k_m") {
            return Ok(Recipe::Q4KM);
        }
        if name.eq_ignore_ascii_case("q5_k_m") {
            return Ok(Recipe::Q5KM);
        }
        Codec::from_name(name).map(Recipe::Uniform).with_context(|| format!("unknown codec '{name}' (a codec name, q4_k_m or q5_k_m)"))
    }

    /// GGUF's `general.file_type` (llama.cpp's `llama_ftype`).
    fn file_type(self) -> Result<u32> {
        Ok(match self {
            Recipe::Q4KM => 15,
            Recipe::Q5KM => 17,
            Recipe::Uniform(codec) => match codec {
                Codec::F32 => 0,
                Codec::F16 => 1,
                Codec::Q4_0 | Codec::Q4Tiled => 2,
                Codec::Q4_1 => 3,
                Codec::Q5_0 => 8,
                Codec::Q5_1 => 9,
                Codec::Q8_0 => 7,
                Codec::Q2K => 10,
                Codec::Q3K => 11,
                Codec::Q4K => 15,
                Codec::Q5K => 17,
                Codec::Q6K => 18,
                Codec::IQ4NL => 25,
                Codec::IQ4XS => 30,
                Codec::BF16 => 32,
                Codec::Q8Row => bail!("q8_row has no GGUF type; synthesize q8_0 and convert"),
            },
        })
    }

    /// The codec of matrix `name` (`blk.{layer}.{role}.weight`, `token_embd.weight`,
    /// `output.weight`) whose rows hold `cols` values, in a model of `shape`.
    fn codec(self, name: &str, cols: u64, shape: &Shape) -> Codec {
        let (base, fallback) = match self {
            Recipe::Uniform(codec) => return codec,
            Recipe::Q4KM => (Codec::Q4K, Codec::Q5_0),
            Recipe::Q5KM => (Codec::Q5K, Codec::Q5_1),
        };
        let whole_superblocks = cols.is_multiple_of(256);
        if name == "output.weight" || (shape.tied && name == "token_embd.weight") {
            return if whole_superblocks { Codec::Q6K } else { Codec::Q8_0 };
        }
        let layer = name.strip_prefix("blk.").and_then(|r| r.split('.').next()).and_then(|i| i.parse::<u64>().ok());
        let wants_q6 = layer.is_some_and(|i| (name.ends_with(".attn_v.weight") || name.ends_with(".ffn_down.weight")) && more_bits(i, shape.layers));
        match (wants_q6, whole_superblocks) {
            (true, true) => Codec::Q6K,
            (true, false) => Codec::Q8_0,
            (false, true) => base,
            (false, false) => fallback,
        }
    }
}

/// llama.cpp's `use_more_bits`: the first and last eighth of the layers, and every third
/// one between.
fn more_bits(layer: u64, layers: u64) -> bool {
    layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2
}

/// GPT-2's byte-to-unicode map: the printable form of every byte in byte-level BPE.
fn byte_chars() -> Vec<char> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
    let mut chars: Vec<u32> = printable.clone();
    let mut n = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(256 + n);
            n += 1;
        }
    }
    let mut by_byte = vec![' '; 256];
    for (b, c) in printable.iter().zip(&chars) {
        by_byte[*b as usize] = char::from_u32(*c).expect("valid scalar");
    }
    by_byte
}

/// A vocabulary of exactly `size` tokens: 256 byte tokens, merged words built from letters
/// and digits (with merges that produce them), then two control tokens (BOS, EOS).
fn vocabulary(size: u64) -> Result<(Vec<String>, Vec<String>, Vec<i32>)> {
    let size = size as usize;
    if size < 300 {
        bail!("vocabulary of {size} is too small (need at least 300)");
    }
    let bytes = byte_chars();
    let mut tokens: Vec<String> = bytes.iter().map(|c| c.to_string()).collect();
    let mut merges = Vec::new();
    let alphabet: Vec<String> = ('a'..='z').chain('A'..='Z').chain('0'..='9').map(|c| c.to_string()).collect();
    let mut frontier: Vec<String> = alphabet.clone();
    let merged_target = size - 2;
    'outer: loop {
        let mut next = Vec::new();
        for left in &frontier {
            for right in &alphabet {
                if tokens.len() >= merged_target {
                    break 'outer;
                }
                let word = format!("{left}{right}");
                merges.push(format!("{left} {right}"));
                tokens.push(word.clone());
                next.push(word);
            }
        }
        frontier = next;
    }
    tokens.push("<|begin_of_text|>".into());
    tokens.push("<|end_of_text|>".into());
    let mut types = vec![1i32; tokens.len()];
    types[size - 2] = 3;
    types[size - 1] = 3;
    Ok((tokens, merges, types))
}

fn metadata(shape: &Shape, recipe: Recipe, codec_name: &str) -> Result<Vec<(String, Value)>> {
    let (tokens, merges, types) = vocabulary(shape.vocab)?;
    let strs = |v: Vec<String>| Value::Array(v.into_iter().map(Value::Str).collect());
    let file_type = recipe.file_type()?;
    let head_dim = shape.head_dim as u32;
    let arch = if shape.gemma { "gemma3" } else { "llama" };
    let mut meta = vec![
        ("general.architecture".into(), Value::Str(arch.into())),
        ("general.name".into(), Value::Str(format!("cortiq synth {} {codec_name}", shape.name))),
        ("general.file_type".into(), Value::U32(file_type)),
        ("general.quantization_version".into(), Value::U32(2)),
        (format!("{arch}.context_length"), Value::U32(shape.ctx as u32)),
        (format!("{arch}.embedding_length"), Value::U32(shape.hidden as u32)),
        (format!("{arch}.block_count"), Value::U32(shape.layers as u32)),
        (format!("{arch}.feed_forward_length"), Value::U32(shape.ffn as u32)),
        (format!("{arch}.attention.head_count"), Value::U32(shape.heads as u32)),
        (format!("{arch}.attention.head_count_kv"), Value::U32(shape.kv_heads as u32)),
        (format!("{arch}.rope.freq_base"), Value::F32(shape.rope_base)),
        (format!("{arch}.rope.dimension_count"), Value::U32(head_dim)),
        (format!("{arch}.attention.layer_norm_rms_epsilon"), Value::F32(if shape.gemma { 1e-6 } else { 1e-5 })),
        (format!("{arch}.vocab_size"), Value::U32(shape.vocab as u32)),
        ("tokenizer.ggml.model".into(), Value::Str("gpt2".into())),
        ("tokenizer.ggml.pre".into(), Value::Str("gpt2".into())),
        ("tokenizer.ggml.tokens".into(), strs(tokens)),
        ("tokenizer.ggml.token_type".into(), Value::Array(types.into_iter().map(Value::I32).collect())),
        ("tokenizer.ggml.merges".into(), strs(merges)),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(shape.vocab as u32 - 2)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(shape.vocab as u32 - 1)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(true)),
    ];
    if shape.gemma {
        meta.extend([
            ("gemma3.attention.key_length".to_string(), Value::U32(head_dim)),
            ("gemma3.attention.value_length".to_string(), Value::U32(head_dim)),
            ("gemma3.attention.sliding_window".to_string(), Value::U32(GEMMA_WINDOW)),
        ]);
    }
    Ok(meta)
}

/// (name, [cols, rows]) of every tensor, in file order.
fn tensor_list(s: &Shape) -> Vec<(String, Vec<u64>)> {
    let (q, kv) = (s.heads * s.head_dim, s.kv_heads * s.head_dim);
    let mut t = vec![("token_embd.weight".to_string(), vec![s.hidden, s.vocab])];
    for i in 0..s.layers {
        let n = |x: &str| format!("blk.{i}.{x}.weight");
        t.push((n("attn_norm"), vec![s.hidden]));
        t.push((n("attn_q"), vec![s.hidden, q]));
        t.push((n("attn_k"), vec![s.hidden, kv]));
        t.push((n("attn_v"), vec![s.hidden, kv]));
        if s.gemma {
            t.push((n("attn_q_norm"), vec![s.head_dim]));
            t.push((n("attn_k_norm"), vec![s.head_dim]));
        }
        t.push((n("attn_output"), vec![q, s.hidden]));
        if s.gemma {
            t.push((n("post_attention_norm"), vec![s.hidden]));
        }
        t.push((n("ffn_norm"), vec![s.hidden]));
        t.push((n("ffn_gate"), vec![s.hidden, s.ffn]));
        t.push((n("ffn_up"), vec![s.hidden, s.ffn]));
        t.push((n("ffn_down"), vec![s.ffn, s.hidden]));
        if s.gemma {
            t.push((n("post_ffw_norm"), vec![s.hidden]));
        }
    }
    t.push(("output_norm.weight".into(), vec![s.hidden]));
    if !s.tied {
        t.push(("output.weight".into(), vec![s.hidden, s.vocab]));
    }
    t
}

/// A deterministic per-row seed.
fn row_seed(seed: u64, tensor: usize, row: u64) -> u64 {
    let mut m = SplitMix64::new(seed ^ ((tensor as u64) << 40) ^ row.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    m.next_u64()
}

/// The model of the named shape (`SHAPES`) in codec `codec_name`, written to `out`.
pub fn synth(shape_name: &str, codec_name: &str, out: &Path, seed: u64) -> Result<()> {
    let shape = SHAPES.iter().find(|s| s.name == shape_name).with_context(|| {
        let names: Vec<&str> = SHAPES.iter().map(|s| s.name).collect();
        format!("unknown shape '{shape_name}' (known: {})", names.join(", "))
    })?;
    synth_shape(shape, codec_name, out, seed)
}

/// The model of any geometry (tests use shapes of their own) in codec `codec_name`.
pub fn synth_shape(shape: &Shape, codec_name: &str, out: &Path, seed: u64) -> Result<()> {
    let recipe = Recipe::parse(codec_name)?;
    let meta = metadata(shape, recipe, codec_name)?;
    let list = tensor_list(shape);
    let specs: Vec<TensorSpec> = list
        .iter()
        .map(|(name, dims)| TensorSpec { name: name.clone(), shape: dims.clone(), codec: if dims.len() == 1 { Codec::F32 } else { recipe.codec(name, dims[0], shape) } })
        .collect();
    let total: u64 = specs.iter().map(|s| cortiq_core::TensorInfo::expected_bytes(&s.name, &s.shape, s.codec)).sum::<Result<u64, _>>()?;
    let tmp = out.with_extension("partial");
    let file = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut w = GgufWriter::new(BufWriter::with_capacity(8 << 20, file), &meta, specs.clone())?;
    let bar = ProgressBar::new(total);
    bar.set_style(ProgressStyle::with_template("synth {bar:40} {bytes}/{total_bytes} {bytes_per_sec} {msg}").expect("static template"));
    for (ti, spec) in specs.iter().enumerate() {
        bar.set_message(spec.name.clone());
        let cols = spec.shape[0] as usize;
        let rows = spec.shape.get(1).copied().unwrap_or(1);
        let data: Vec<u8> = if spec.shape.len() == 1 {
            norm_weights(&spec.name, cols, row_seed(seed, ti, 0)).into_iter().flat_map(f32::to_le_bytes).collect()
        } else {
            let packed: Vec<Vec<u8>> = (0..rows)
                .into_par_iter()
                .map(|r| {
                    let values = SplitMix64::new(row_seed(seed, ti, r)).normals(cols, WEIGHT_STD);
                    spec.codec.pack_row(&values)
                })
                .collect::<Result<_, _>>()?;
            packed.concat()
        };
        w.write_tensor(&data)?;
        bar.inc(data.len() as u64);
    }
    w.finish()?;
    bar.finish_and_clear();
    std::fs::rename(&tmp, out).with_context(|| format!("renaming to {}", out.display()))?;
    eprintln!("cortiq: wrote {} ({} {codec_name}, {} tensors)", out.display(), shape.name, specs.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_has_exact_size_unique_tokens_and_valid_merges() {
        for size in [2048u64, 49152] {
            let (tokens, merges, types) = vocabulary(size).unwrap();
            assert_eq!(tokens.len() as u64, size);
            assert_eq!(types.len() as u64, size);
            let set: std::collections::HashSet<&String> = tokens.iter().collect();
            assert_eq!(set.len(), tokens.len(), "duplicate tokens");
            for m in &merges {
                let (a, b) = m.split_once(' ').unwrap();
                assert!(set.contains(&a.to_string()) && set.contains(&b.to_string()) && set.contains(&format!("{a}{b}")), "{m}");
            }
        }
    }

    #[test]
    fn more_bits_names_llama_cpps_layers() {
        let picked: Vec<u64> = (0..32).filter(|&i| more_bits(i, 32)).collect();
        assert_eq!(picked, [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]);
        let picked: Vec<u64> = (0..16).filter(|&i| more_bits(i, 16)).collect();
        assert_eq!(picked, [0, 1, 4, 7, 10, 13, 14, 15]);
    }

    #[test]
    fn q4_k_m_follows_llama_cpps_mix_and_its_fallbacks() {
        let shape = |name: &str| *SHAPES.iter().find(|s| s.name == name).unwrap();
        let of = |shape: &Shape| -> std::collections::HashMap<String, Codec> {
            tensor_list(shape).into_iter().filter(|(_, d)| d.len() == 2).map(|(n, d)| (n.clone(), Recipe::Q4KM.codec(&n, d[0], shape))).collect()
        };
        // llama-8b: untied, every width a multiple of 256.
        let m = of(&shape("llama-8b"));
        assert_eq!((m["token_embd.weight"], m["output.weight"]), (Codec::Q4K, Codec::Q6K));
        for (layer, q6) in [(0, true), (4, false), (5, false), (6, true), (27, true), (28, true)] {
            let want = if q6 { Codec::Q6K } else { Codec::Q4K };
            assert_eq!((m[&format!("blk.{layer}.attn_v.weight")], m[&format!("blk.{layer}.ffn_down.weight")]), (want, want), "layer {layer}");
            for role in ["attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"] {
                assert_eq!(m[&format!("blk.{layer}.{role}.weight")], Codec::Q4K, "{role} {layer}");
            }
        }
        // smollm2: tied, 576 wide (not whole superblocks); the FFN's 1536 are.
        let m = of(&shape("smollm2-135m"));
        assert_eq!(m["token_embd.weight"], Codec::Q8_0);
        assert_eq!((m["blk.0.attn_q.weight"], m["blk.0.attn_v.weight"], m["blk.0.ffn_down.weight"]), (Codec::Q5_0, Codec::Q8_0, Codec::Q6K));
        assert_eq!((m["blk.4.attn_v.weight"], m["blk.4.ffn_down.weight"], m["blk.4.ffn_gate.weight"]), (Codec::Q5_0, Codec::Q4K, Codec::Q5_0));
        assert_eq!(Recipe::parse("Q4_K_M").unwrap(), Recipe::Q4KM);
        assert_eq!(Recipe::parse("q8_0").unwrap(), Recipe::Uniform(Codec::Q8_0));
        assert!(Recipe::parse("q4_k_x").unwrap_err().to_string().contains("q4_k_m"));
    }

    #[test]
    fn q5_k_m_is_q4_k_m_with_q5_k_and_q5_1() {
        let shape = |name: &str| *SHAPES.iter().find(|s| s.name == name).unwrap();
        for name in ["llama-8b", "llama-1b", "tiny", "smollm2-135m"] {
            let s = shape(name);
            for (n, d) in tensor_list(&s).into_iter().filter(|(_, d)| d.len() == 2) {
                let q4 = Recipe::Q4KM.codec(&n, d[0], &s);
                let want = match q4 {
                    Codec::Q4K => Codec::Q5K,
                    Codec::Q5_0 => Codec::Q5_1,
                    other => other,
                };
                assert_eq!(Recipe::Q5KM.codec(&n, d[0], &s), want, "{name} {n}");
            }
        }
        assert_eq!(Recipe::Q5KM.codec("blk.4.attn_q.weight", 576, &shape("smollm2-135m")), Codec::Q5_1);
        assert_eq!((Recipe::parse("Q5_K_M").unwrap(), Recipe::Q5KM.file_type().unwrap()), (Recipe::Q5KM, 17));
    }

    #[test]
    fn a_q4_k_m_model_loads_with_its_mix_and_decodes_on_the_cpu() {
        let dir = std::env::temp_dir().join(format!("cortiq-synth-q4km-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny-q4_k_m.gguf");
        synth("tiny", "q4_k_m", &path, 7).unwrap();
        let engine = crate::generate::Engine::load(&path).unwrap();
        let m = &engine.model;
        // tiny: 2 layers, so layer 1 is the last eighth's; tied, so the embedding is the head's Q6_K.
        assert_eq!(m.embed.codec, Codec::Q6K);
        assert_eq!((m.layers[0].wv.codec, m.layers[0].down.codec, m.layers[0].wq.codec), (Codec::Q4K, Codec::Q4K, Codec::Q4K));
        assert_eq!((m.layers[1].wv.codec, m.layers[1].down.codec, m.layers[1].gate.codec), (Codec::Q6K, Codec::Q6K, Codec::Q4K));
        let mut session = crate::pipeline::Session::new(std::sync::Arc::clone(&engine.model), 64);
        let logits = session.prefill(&[1, 2, 3]).unwrap();
        assert!(logits.len() == 2048 && logits.iter().all(|v| v.is_finite()), "{} logits", logits.len());
        let next = session.step_greedy(5).unwrap();
        assert!((next as usize) < 2048);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_gemma_shape_loads_as_gemma_3_and_decodes_on_the_cpu() {
        let dir = std::env::temp_dir().join(format!("cortiq-synth-gemma-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny-gemma.gguf");
        let tiny = *SHAPES.iter().find(|s| s.name == "tiny").unwrap();
        // Heads wider than hidden / heads, as gemma-3-270m's (256 against 160).
        synth_shape(&Shape { name: "tiny-gemma", heads: 2, kv_heads: 1, head_dim: 192, gemma: true, ..tiny }, "q8_0", &path, 3).unwrap();
        let engine = crate::generate::Engine::load(&path).unwrap();
        let c = &engine.model.cfg;
        assert_eq!((c.family, c.head_dim, c.q_dim(), c.kv_dim()), (crate::model::Family::Gemma3, 192, 384, 192));
        assert!(c.qk_norm && c.post_norms && c.act == crate::gpu::backend::Activation::GeluTanh);
        assert_eq!(c.sliding.map(|s| s.window), Some(GEMMA_WINDOW as usize));
        assert!(engine.model.layers.iter().all(|l| l.q_norm.as_ref().is_some_and(|v| v.len() == 192) && l.post_ffn_norm.is_some()));
        // The block's own norms differ from one another (a kernel taking one for the other
        // must show), the input norms are 1 (the one-ulp noise floor moves one of them).
        for l in &engine.model.layers {
            let norms = [&l.q_norm, &l.k_norm, &l.post_attn_norm, &l.post_ffn_norm].map(|n| n.clone().unwrap());
            assert!(norms.iter().all(|n| n.iter().any(|&v| (v - 1.0).abs() > 0.05)));
            assert!(norms[0] != norms[1] && norms[2] != norms[3]);
            assert!(l.attn_norm.iter().chain(&l.ffn_norm).all(|&v| v == 1.0));
        }
        let mut session = crate::pipeline::Session::new(std::sync::Arc::clone(&engine.model), 64);
        let logits = session.prefill(&[1, 2, 3]).unwrap();
        assert!(logits.len() == 2048 && logits.iter().all(|v| v.is_finite()), "{} logits", logits.len());
        assert!((session.step_greedy(5).unwrap() as usize) < 2048);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Q5_1 (the Q5_K_M mix's fallback) and the 2-, 3- and non-linear 4-bit types through
    /// the CPU pipeline: tiny in each,
    /// from the same f32 weights (same seed), against the F32 model's logits over a prompt.
    /// Each added bit halves the step, so the errors must fall in bit order: Q5_1 well below
    /// Q4_1, Q3_K below Q2_K, both 4-bit i-quants below Q3_K.
    #[test]
    fn lower_bit_models_decode_farther_from_their_f32_weights() {
        let dir = std::env::temp_dir().join(format!("cortiq-synth-bits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let logits = |codec: &str| {
            let path = dir.join(format!("tiny-{codec}.gguf"));
            synth("tiny", codec, &path, 9).unwrap();
            let engine = crate::generate::Engine::load(&path).unwrap();
            let mut session = crate::pipeline::Session::new(std::sync::Arc::clone(&engine.model), 64);
            session.prefill(&[5, 17, 300, 42, 7, 1999]).unwrap()
        };
        let exact = logits("f32");
        let err = |codec: &str| {
            let got = logits(codec);
            assert!(got.iter().all(|v| v.is_finite()), "{codec}: non-finite logits");
            let e = (got.iter().zip(&exact).map(|(x, y)| (x - y).powi(2)).sum::<f32>() / exact.iter().map(|y| y * y).sum::<f32>()).sqrt();
            eprintln!("tiny {codec}: relative L2 of the logits against F32's {e:.3e}");
            e
        };
        let (q5_1, q4_1, q2_k, q3_k, iq4_nl, iq4_xs) = (err("q5_1"), err("q4_1"), err("q2_k"), err("q3_k"), err("iq4_nl"), err("iq4_xs"));
        assert!(q5_1 < 0.6 * q4_1, "q5_1 {q5_1} vs q4_1 {q4_1}");
        assert!(q3_k < q2_k && q2_k < 1.0, "q3_k {q3_k} vs q2_k {q2_k}");
        assert!(iq4_nl < q3_k && iq4_xs < q3_k, "iq4_nl {iq4_nl}, iq4_xs {iq4_xs} vs q3_k {q3_k}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
