//! `cortiq inspect MODEL`: what a model file holds.

use anyhow::Result;
use cortiq_core::{Codec, ModelFile};
use cortiq_engine::model::LlamaConfig;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The inspection report as text.
pub fn report(m: &ModelFile, show_metadata: bool) -> Result<String> {
    let mut s = String::new();
    writeln!(s, "file:          {}", m.path.display())?;
    writeln!(s, "format:        {}", m.format)?;
    writeln!(s, "file size:     {} bytes ({})", m.file_size(), human(m.file_size()))?;
    writeln!(s, "architecture:  {}", m.architecture())?;
    if let Some(name) = m.meta_str("general.name") {
        writeln!(s, "name:          {name}")?;
    }
    match LlamaConfig::from_model(m) {
        Ok(c) => writeln!(
            s,
            "geometry:      {} layers, hidden {}, ffn {}, heads {} (kv {}), head dim {}, vocab {}, context {}, rope base {}",
            c.n_layer, c.n_embd, c.n_ff, c.n_head, c.n_head_kv, c.head_dim, c.vocab, c.n_ctx_train, c.rope_base
        )?,
        Err(e) => writeln!(s, "geometry:      (not a runnable llama-family model: {e})")?,
    }
    let tok_kind = m.meta_str("tokenizer.ggml.model").map(str::to_string).or_else(|| m.meta_str("tokenizer.huggingface.json").map(|_| "huggingface tokenizer.json".to_string()));
    let n_tokens = m.meta("tokenizer.ggml.tokens").and_then(|v| v.as_array()).map(|a| a.len());
    writeln!(
        s,
        "tokenizer:     {}{}",
        tok_kind.unwrap_or_else(|| "none".into()),
        n_tokens.map(|n| format!(" ({n} tokens, pre '{}')", m.meta_str("tokenizer.ggml.pre").unwrap_or("default"))).unwrap_or_default()
    )?;
    writeln!(s, "metadata keys: {}", m.metadata.len())?;
    if show_metadata {
        for (k, v) in &m.metadata {
            writeln!(s, "  {k} = {}", v.summary())?;
        }
    }
    writeln!(s, "tensors:       {}", m.tensors.len())?;
    writeln!(s)?;
    writeln!(s, "| name | shape | codec | bytes |")?;
    writeln!(s, "| --- | --- | --- | --- |")?;
    let mut per_codec: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for t in &m.tensors {
        writeln!(s, "| {} | {:?} | {} | {} |", t.name, t.shape, t.codec, t.nbytes)?;
        let e = per_codec.entry(t.codec.name()).or_default();
        e.0 += 1;
        e.1 += t.nbytes;
    }
    writeln!(s)?;
    writeln!(s, "| codec | tensors | bytes |")?;
    writeln!(s, "| --- | --- | --- |")?;
    for (c, (n, b)) in &per_codec {
        writeln!(s, "| {c} | {n} | {b} ({}) |", human(*b))?;
    }
    let total: u64 = m.tensors.iter().map(|t| t.nbytes).sum();
    writeln!(s, "| total | {} | {total} ({}) |", m.tensors.len(), human(total))?;
    Ok(s)
}

/// The codec that holds most tensor bytes (what `general.file_type` usually names).
pub fn dominant_codec(m: &ModelFile) -> Option<Codec> {
    let mut by: BTreeMap<&str, (Codec, u64)> = BTreeMap::new();
    for t in &m.tensors {
        by.entry(t.codec.name()).or_insert((t.codec, 0)).1 += t.nbytes;
    }
    by.values().max_by_key(|(_, b)| *b).map(|(c, _)| *c)
}

pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}
