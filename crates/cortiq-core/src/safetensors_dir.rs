//! Hugging Face checkpoints: one `model.safetensors`, or shards listed by
//! `model.safetensors.index.json`, plus `config.json` for the geometry. Tensor names are
//! mapped to the GGUF names the pipeline uses; HF's rotate-half RoPE layout is recorded as
//! `cortiq.rope.neox = true` (GGUF files store Q/K permuted for the interleaved layout).

use crate::codec::Codec;
use crate::error::{invalid, FormatError, Result};
use crate::model_file::{map_file, Format, ModelFile, TensorInfo};
use crate::value::Value;
use safetensors::{Dtype, SafeTensors};
use std::path::{Path, PathBuf};

/// Open a safetensors directory (or a single `.safetensors` file next to its config.json).
pub fn open(path: &Path) -> Result<ModelFile> {
    let (dir, shards) = shard_paths(path)?;
    let mut maps = Vec::new();
    let mut tensors = Vec::new();
    for (file_index, shard) in shards.iter().enumerate() {
        let map = map_file(shard)?;
        let st = SafeTensors::deserialize(&map).map_err(|e| invalid(shard.display().to_string(), format!("not a valid safetensors file: {e}")))?;
        let base = map.as_ptr() as usize;
        for (name, view) in st.tensors() {
            let codec = match view.dtype() {
                Dtype::F32 => Codec::F32,
                Dtype::F16 => Codec::F16,
                Dtype::BF16 => Codec::BF16,
                other => return Err(invalid(format!("tensor '{name}'"), format!("dtype {other:?} is not supported (F32, F16, BF16 are)"))),
            };
            // safetensors shapes are row-major [rows, cols]; ggml order is reversed.
            let mut shape: Vec<u64> = view.shape().iter().rev().map(|&d| d as u64).collect();
            if shape.is_empty() {
                shape.push(1);
            }
            let nbytes = TensorInfo::expected_bytes(&name, &shape, codec)?;
            let offset = (view.data().as_ptr() as usize - base) as u64;
            tensors.push(TensorInfo { name: gguf_name(&name), shape, codec, offset, nbytes, file: file_index, checksum: None });
        }
        maps.push(map);
    }
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    let metadata = config_metadata(&dir)?;
    Ok(ModelFile::new(path, Format::Safetensors, metadata, tensors, maps))
}

fn shard_paths(path: &Path) -> Result<(PathBuf, Vec<PathBuf>)> {
    if path.is_file() {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        return Ok((dir, vec![path.to_path_buf()]));
    }
    let index = path.join("model.safetensors.index.json");
    if index.exists() {
        let text = std::fs::read_to_string(&index).map_err(|source| FormatError::Io { path: index.display().to_string(), source })?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| invalid(index.display().to_string(), e.to_string()))?;
        let map = json.get("weight_map").and_then(|m| m.as_object()).ok_or_else(|| invalid(index.display().to_string(), "no weight_map object"))?;
        let mut files: Vec<String> = map.values().filter_map(|v| v.as_str().map(str::to_string)).collect();
        files.sort();
        files.dedup();
        for f in &files {
            if f.contains('/') || f.contains("..") {
                return Err(invalid(index.display().to_string(), format!("shard name {f:?} leaves the directory")));
            }
        }
        return Ok((path.to_path_buf(), files.into_iter().map(|f| path.join(f)).collect()));
    }
    let single = path.join("model.safetensors");
    if single.exists() {
        return Ok((path.to_path_buf(), vec![single]));
    }
    Err(invalid(path.display().to_string(), "no model.safetensors or model.safetensors.index.json in this directory"))
}

/// Map a Hugging Face llama-family tensor name to its GGUF name (unknown names pass through).
pub fn gguf_name(hf: &str) -> String {
    let fixed = [
        ("model.embed_tokens.weight", "token_embd.weight"),
        ("model.norm.weight", "output_norm.weight"),
        ("lm_head.weight", "output.weight"),
    ];
    if let Some((_, g)) = fixed.iter().find(|(h, _)| *h == hf) {
        return g.to_string();
    }
    if let Some(rest) = hf.strip_prefix("model.layers.") {
        if let Some((layer, tail)) = rest.split_once('.') {
            let part = match tail {
                "input_layernorm.weight" => "attn_norm.weight",
                "post_attention_layernorm.weight" => "ffn_norm.weight",
                "self_attn.q_proj.weight" => "attn_q.weight",
                "self_attn.k_proj.weight" => "attn_k.weight",
                "self_attn.v_proj.weight" => "attn_v.weight",
                "self_attn.o_proj.weight" => "attn_output.weight",
                "mlp.gate_proj.weight" => "ffn_gate.weight",
                "mlp.up_proj.weight" => "ffn_up.weight",
                "mlp.down_proj.weight" => "ffn_down.weight",
                _ => return hf.to_string(),
            };
            return format!("blk.{layer}.{part}");
        }
    }
    hf.to_string()
}

/// GGUF-style metadata from config.json (llama family keys).
fn config_metadata(dir: &Path) -> Result<Vec<(String, Value)>> {
    let cfg_path = dir.join("config.json");
    let text = std::fs::read_to_string(&cfg_path).map_err(|source| FormatError::Io { path: cfg_path.display().to_string(), source })?;
    let cfg: serde_json::Value = serde_json::from_str(&text).map_err(|e| invalid(cfg_path.display().to_string(), format!("invalid JSON: {e}")))?;
    let arch = match cfg.get("model_type").and_then(|v| v.as_str()) {
        Some("llama") | Some("mistral") => "llama",
        Some(other) => other,
        None => return Err(invalid(cfg_path.display().to_string(), "no model_type")),
    };
    let int = |k: &str| cfg.get(k).and_then(|v| v.as_u64());
    let mut md = vec![("general.architecture".to_string(), Value::Str(arch.to_string()))];
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            md.push((format!("{arch}.{k}"), v));
        }
    };
    put("embedding_length", int("hidden_size").map(Value::U64));
    put("feed_forward_length", int("intermediate_size").map(Value::U64));
    put("block_count", int("num_hidden_layers").map(Value::U64));
    put("attention.head_count", int("num_attention_heads").map(Value::U64));
    put("attention.head_count_kv", int("num_key_value_heads").or(int("num_attention_heads")).map(Value::U64));
    put("context_length", int("max_position_embeddings").map(Value::U64));
    put("vocab_size", int("vocab_size").map(Value::U64));
    put("rope.freq_base", cfg.get("rope_theta").and_then(|v| v.as_f64()).map(|v| Value::F32(v as f32)));
    put("attention.layer_norm_rms_epsilon", cfg.get("rms_norm_eps").and_then(|v| v.as_f64()).map(|v| Value::F32(v as f32)));
    md.push(("cortiq.rope.neox".to_string(), Value::Bool(true)));
    if dir.join("tokenizer.json").exists() {
        md.push(("tokenizer.huggingface.json".to_string(), Value::Str(dir.join("tokenizer.json").display().to_string())));
    }
    Ok(md)
}
