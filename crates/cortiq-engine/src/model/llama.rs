//! The llama family (Llama, SmolLM2, Mistral-style) and Gemma 3, which is the same block
//! with a few switches (embedding scale, q/k norms, sandwich norms, GELU, sliding-window
//! layers with their own RoPE base): geometry from metadata, weights checked against it when
//! the model loads, so the forward pass never meets a bad shape.

use crate::cpu::matmul::WeightView;
use crate::gpu::backend::Activation;
use crate::error::EngineError;
use cortiq_core::{Codec, ModelFile, TensorInfo};
use std::sync::Arc;

/// Which variant of the block a model uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Llama,
    Gemma3,
}

/// Sliding-window attention on some layers (Gemma 3: five local layers, then one global).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlidingWindow {
    /// Positions a local layer sees (the query's own included).
    pub window: usize,
    /// Every `pattern`-th layer (the last of each group) is global.
    pub pattern: usize,
    /// RoPE base of the local layers.
    pub rope_base: f32,
}

/// Geometry and hyper-parameters of a llama-family model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlamaConfig {
    pub family: Family,
    pub n_embd: usize,
    pub n_ff: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub rope_dims: usize,
    pub rope_base: f32,
    /// Rotate-half RoPE pairs (HF layout) instead of interleaved pairs (GGUF llama layout).
    pub rope_neox: bool,
    pub eps: f32,
    pub n_ctx_train: usize,
    pub vocab: usize,
    /// Multiplier of the embedding rows (Gemma: sqrt(n_embd)).
    pub embed_scale: f32,
    /// Multiplier of the query before attention (the score scale then is 1).
    pub attn_scale: f32,
    pub act: Activation,
    /// Per-head RMSNorm of q and k before RoPE.
    pub qk_norm: bool,
    /// RMSNorm of the attention and FFN outputs before their residual adds.
    pub post_norms: bool,
    pub sliding: Option<SlidingWindow>,
}

/// Architectures whose GGUF layout this pipeline runs.
pub const SUPPORTED_ARCHITECTURES: [&str; 3] = ["llama", "mistral", "gemma3"];

impl LlamaConfig {
    /// Read the geometry from GGUF-style metadata; every missing key is named.
    pub fn from_model(m: &ModelFile) -> Result<Self, EngineError> {
        let arch = m.architecture().to_string();
        if !SUPPORTED_ARCHITECTURES.contains(&arch.as_str()) {
            return Err(EngineError::UnsupportedArchitecture { arch, supported: SUPPORTED_ARCHITECTURES.join(", ") });
        }
        let req = |k: &str| -> Result<usize, EngineError> {
            let key = format!("{arch}.{k}");
            m.meta_u64(&key).map(|v| v as usize).ok_or(EngineError::MissingMetadata(key))
        };
        let n_embd = req("embedding_length")?;
        let n_head = req("attention.head_count")?;
        let n_head_kv = m.meta_u64(&format!("{arch}.attention.head_count_kv")).map(|v| v as usize).unwrap_or(n_head);
        if n_head == 0 || n_head_kv == 0 || n_head % n_head_kv != 0 {
            return Err(EngineError::BadModel(format!("{n_head} attention heads cannot share {n_head_kv} KV heads")));
        }
        let head_dim = m.meta_u64(&format!("{arch}.attention.key_length")).map(|v| v as usize).unwrap_or(n_embd / n_head);
        let (emb, _) = m.get("token_embd.weight")?;
        let family = if arch == "gemma3" { Family::Gemma3 } else { Family::Llama };
        let gemma = family == Family::Gemma3;
        let cfg = LlamaConfig {
            family,
            n_embd,
            n_ff: req("feed_forward_length")?,
            n_layer: req("block_count")?,
            n_head,
            n_head_kv,
            head_dim,
            rope_dims: m.meta_u64(&format!("{arch}.rope.dimension_count")).map(|v| v as usize).unwrap_or(head_dim),
            rope_base: m.meta_f64(&format!("{arch}.rope.freq_base")).unwrap_or(10000.0) as f32,
            rope_neox: gemma || m.meta("cortiq.rope.neox").and_then(|v| v.as_bool()).unwrap_or(false),
            eps: m.meta_f64(&format!("{arch}.attention.layer_norm_rms_epsilon")).unwrap_or(1e-5) as f32,
            n_ctx_train: m.meta_u64(&format!("{arch}.context_length")).map(|v| v as usize).unwrap_or(2048),
            vocab: emb.rows() as usize,
            embed_scale: if gemma { (n_embd as f32).sqrt() } else { 1.0 },
            attn_scale: 1.0 / (head_dim as f32).sqrt(),
            act: if gemma { Activation::GeluTanh } else { Activation::Silu },
            qk_norm: gemma,
            post_norms: gemma,
            // llama.cpp's Gemma 3 hyper-parameters: pattern 6, local RoPE base 10 000.
            sliding: match (gemma, m.meta_u64(&format!("{arch}.attention.sliding_window"))) {
                (true, Some(w)) => Some(SlidingWindow { window: w as usize, pattern: 6, rope_base: 10_000.0 }),
                _ => None,
            },
        };
        if cfg.rope_dims > cfg.head_dim || !cfg.rope_dims.is_multiple_of(2) || cfg.head_dim == 0 {
            return Err(EngineError::BadModel(format!("rope width {} does not fit head size {}", cfg.rope_dims, cfg.head_dim)));
        }
        Ok(cfg)
    }

    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }

    pub fn kv_dim(&self) -> usize {
        self.n_head_kv * self.head_dim
    }

    /// Whether layer `l` attends over a sliding window (and uses the local RoPE base).
    pub fn is_local(&self, l: usize) -> bool {
        self.sliding.is_some_and(|s| l % s.pattern < s.pattern - 1)
    }

    /// (RoPE base, attention window) of layer `l`.
    pub fn layer_attention(&self, l: usize) -> (f32, Option<usize>) {
        match self.sliding {
            Some(s) if self.is_local(l) => (s.rope_base, Some(s.window)),
            _ => (self.rope_base, None),
        }
    }
}

/// A weight tensor of the model, by index into the file's directory.
#[derive(Debug, Clone, Copy)]
pub struct Weight {
    index: usize,
    pub rows: usize,
    pub cols: usize,
    pub codec: Codec,
}

/// One transformer block's weights.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub wq: Weight,
    pub wk: Weight,
    pub wv: Weight,
    pub wo: Weight,
    pub ffn_norm: Vec<f32>,
    /// Per-head q/k norms (head_dim each), when the family has them.
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    /// Norms of the attention and FFN outputs, when the family has them.
    pub post_attn_norm: Option<Vec<f32>>,
    pub post_ffn_norm: Option<Vec<f32>>,
    pub gate: Weight,
    pub up: Weight,
    pub down: Weight,
}

impl LayerWeights {
    /// The block's matrices in the order the graphs stream them: wq, wk, wv, wo, gate, up,
    /// down.
    pub fn matrices(&self) -> [Weight; 7] {
        [self.wq, self.wk, self.wv, self.wo, self.gate, self.up, self.down]
    }
}

/// A loaded llama-family model: the mapped file, its geometry and checked weight handles.
pub struct Llama {
    pub file: Arc<ModelFile>,
    pub cfg: LlamaConfig,
    pub embed: Weight,
    pub layers: Vec<LayerWeights>,
    pub output_norm: Vec<f32>,
    /// The head; the embedding matrix itself when the model ties them.
    pub output: Weight,
}

impl Llama {
    /// Check every tensor against the geometry and build the weight handles.
    pub fn load(file: Arc<ModelFile>) -> Result<Self, EngineError> {
        let cfg = LlamaConfig::from_model(&file)?;
        let weight = |name: &str, rows: usize, cols: usize| -> Result<Weight, EngineError> {
            let index = file.tensors.iter().position(|t| t.name == name).ok_or_else(|| EngineError::BadModel(format!("tensor '{name}' is missing")))?;
            let t: &TensorInfo = &file.tensors[index];
            if t.cols() as usize != cols || t.rows() as usize != rows {
                return Err(EngineError::BadModel(format!("tensor '{name}': expected {rows} rows x {cols} columns, found shape {:?}", t.shape)));
            }
            Ok(Weight { index, rows, cols, codec: t.codec })
        };
        let vector = |name: &str, n: usize| -> Result<Vec<f32>, EngineError> {
            let w = weight(name, 1, n)?;
            let mut v = vec![0f32; n];
            w.codec.unpack_row(file.tensor_data(&file.tensors[w.index]), &mut v)?;
            Ok(v)
        };
        let (d, kv, ff) = (cfg.n_embd, cfg.kv_dim(), cfg.n_ff);
        // Every layer has at least 9 tensors: a larger count is a bad header, not an allocation.
        if cfg.n_layer > file.tensors.len() / 9 {
            return Err(EngineError::BadModel(format!("{} layers declared, but the file has only {} tensors", cfg.n_layer, file.tensors.len())));
        }
        let mut layers = Vec::with_capacity(cfg.n_layer);
        for i in 0..cfg.n_layer {
            let n = |s: &str| format!("blk.{i}.{s}.weight");
            layers.push(LayerWeights {
                attn_norm: vector(&n("attn_norm"), d)?,
                wq: weight(&n("attn_q"), cfg.q_dim(), d)?,
                wk: weight(&n("attn_k"), kv, d)?,
                wv: weight(&n("attn_v"), kv, d)?,
                wo: weight(&n("attn_output"), d, cfg.q_dim())?,
                ffn_norm: vector(&n("ffn_norm"), d)?,
                q_norm: if cfg.qk_norm { Some(vector(&n("attn_q_norm"), cfg.head_dim)?) } else { None },
                k_norm: if cfg.qk_norm { Some(vector(&n("attn_k_norm"), cfg.head_dim)?) } else { None },
                post_attn_norm: if cfg.post_norms { Some(vector(&n("post_attention_norm"), d)?) } else { None },
                post_ffn_norm: if cfg.post_norms { Some(vector(&n("post_ffw_norm"), d)?) } else { None },
                gate: weight(&n("ffn_gate"), ff, d)?,
                up: weight(&n("ffn_up"), ff, d)?,
                down: weight(&n("ffn_down"), d, ff)?,
            });
        }
        let embed = weight("token_embd.weight", cfg.vocab, d)?;
        let output = if file.tensor("output.weight").is_some() { weight("output.weight", cfg.vocab, d)? } else { embed };
        let output_norm = vector("output_norm.weight", d)?;
        Ok(Llama { cfg, embed, layers, output_norm, output, file })
    }

    /// The bytes view of a weight, for the kernels.
    pub fn view(&self, w: &Weight) -> WeightView<'_> {
        WeightView { codec: w.codec, rows: w.rows, cols: w.cols, bytes: self.file.tensor_data(&self.file.tensors[w.index]) }
    }

    /// A weight as the GPU facade takes it: the residency key (stable for this mapping of
    /// the tensor) and its bytes.
    pub fn weight_arg(&self, w: &Weight) -> crate::gpu::backend::WeightArg<'_> {
        let view = self.view(w);
        crate::gpu::backend::WeightArg { key: view.bytes.as_ptr() as u64 ^ ((view.bytes.len() as u64) << 48), view }
    }

    /// The first rows of the residual stream: `tokens`' embedding rows into x
    /// (tokens.len(), n_embd), scaled as the family scales them. Every token must be in
    /// the vocabulary.
    pub fn embed_rows(&self, tokens: &[u32], x: &mut [f32]) {
        let embed = self.view(&self.embed);
        for (row, &t) in x.chunks_exact_mut(self.cfg.n_embd).zip(tokens) {
            embed.decode_row(t as usize, row);
        }
        if self.cfg.embed_scale != 1.0 {
            x.iter_mut().for_each(|v| *v *= self.cfg.embed_scale);
        }
    }

    /// Weight bytes one decode token reads (every matrix once, plus one embedding row).
    pub fn weight_bytes_per_token(&self) -> u64 {
        let mut total = 0u64;
        for l in &self.layers {
            for w in l.matrices() {
                total += self.view(&w).bytes.len() as u64;
            }
        }
        total + self.view(&self.output).bytes.len() as u64 + self.view(&self.embed).row_bytes() as u64
    }

    /// Weight bytes one decode token reads, by stage (SPEC section 12): the honest floor of
    /// each stage is its bytes over the measured bandwidth.
    pub fn weight_bytes_by_stage(&self) -> Vec<(&'static str, u64)> {
        let bytes = |w: &Weight| self.view(w).bytes.len() as u64;
        let attention: u64 = self.layers.iter().map(|l| bytes(&l.wq) + bytes(&l.wk) + bytes(&l.wv) + bytes(&l.wo)).sum();
        let ffn: u64 = self.layers.iter().map(|l| bytes(&l.gate) + bytes(&l.up) + bytes(&l.down)).sum();
        let norms = 4 * self.cfg.n_embd as u64 * (2 * self.cfg.n_layer as u64 + 1);
        vec![("misc (embedding row, norms)", self.view(&self.embed).row_bytes() as u64 + norms), ("attention", attention), ("dense ffn", ffn), ("head", bytes(&self.output))]
    }

    /// Parameter count (all tensors).
    pub fn n_params(&self) -> u64 {
        self.file.tensors.iter().map(|t| t.elements()).sum()
    }
}
