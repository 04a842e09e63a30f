//! One forward pass of a llama-family model over a batch of consecutive positions.
//! Every heavy op goes through `Ops` (one entry point per op kind): that is where the GPU
//! facade plugs in; the CPU kernels are the reference and the fallback.

use crate::cpu::matmul::{matmul, matmul_many, WeightView};
use crate::cpu::attention::attend_head;
use crate::cpu::f16::round_slice;
use crate::cpu::ops::{add_in_place, rmsnorm, rope_table, rope_with, swiglu};
use crate::error::EngineError;
use crate::kv::KvCache;
use crate::model::llama::{Llama, Weight};
use crate::cpu::pool::{parallel_for, pool};
use std::sync::Arc;

/// The attention output shared by tasks that write disjoint head slices.
#[derive(Clone, Copy)]
struct AttPtr(*mut f32);
// SAFETY: every task writes a distinct slice; the buffer outlives the parallel region.
unsafe impl Send for AttPtr {}
unsafe impl Sync for AttPtr {}

impl AttPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// A model plus one sequence's state (its KV cache).
pub struct Session {
    pub model: Arc<Llama>,
    pub kv: KvCache,
}

/// Prompt positions per forward call during prefill: big enough for weight reuse across
/// tokens, small enough that activations stay in cache.
pub const PREFILL_CHUNK: usize = 256;

impl Session {
    /// A session with room for `n_ctx` positions (capped by the model's trained context).
    pub fn new(model: Arc<Llama>, n_ctx: usize) -> Self {
        let cfg = &model.cfg;
        let kv = KvCache::new(cfg.n_layer, cfg.kv_dim(), n_ctx.min(cfg.n_ctx_train).max(1));
        Session { model, kv }
    }

    pub fn n_ctx(&self) -> usize {
        self.kv.capacity()
    }

    /// Run `tokens` at positions `kv.len()..` and return the final-normed hidden states
    /// (tokens.len(), n_embd). The cache grows by tokens.len().
    pub fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        let m = Arc::clone(&self.model);
        let cfg = &m.cfg;
        let (b, d) = (tokens.len(), cfg.n_embd);
        let pos0 = self.kv.len();
        if pos0 + b > self.kv.capacity() {
            return Err(EngineError::PromptTooLong { tokens: pos0 + b, ctx: self.kv.capacity(), reserve: 0 });
        }
        // x: (b, n_embd) residual stream
        let mut x = vec![0f32; b * d];
        let embed = m.view(&m.embed);
        for (i, &t) in tokens.iter().enumerate() {
            if t as usize >= cfg.vocab {
                return Err(EngineError::BadToken { id: t, vocab: cfg.vocab });
            }
            embed.decode_row(t as usize, &mut x[i * d..(i + 1) * d]);
        }
        let (qd, kvd, hd) = (cfg.q_dim(), cfg.kv_dim(), cfg.head_dim);
        let mut xn = vec![0f32; b * d]; // (b, n_embd) normed input
        let mut q = vec![0f32; b * qd]; // (b, n_head * head_dim)
        let mut k = vec![0f32; b * kvd]; // (b, n_head_kv * head_dim)
        let mut v = vec![0f32; b * kvd];
        let mut att = vec![0f32; b * qd]; // (b, n_head * head_dim) attention output
        let mut proj = vec![0f32; b * d]; // (b, n_embd) projections back to the stream
        let mut gate = vec![0f32; b * cfg.n_ff]; // (b, n_ff)
        let mut up = vec![0f32; b * cfg.n_ff];
        let rope_tables: Vec<_> = (0..b).map(|i| rope_table(pos0 + i, cfg.rope_dims, cfg.rope_base)).collect();
        for (li, layer) in m.layers.iter().enumerate() {
            for i in 0..b {
                rmsnorm(&mut xn[i * d..(i + 1) * d], &x[i * d..(i + 1) * d], &layer.attn_norm, cfg.eps);
            }
            matmul_many(&mut [(m.view(&layer.wq), &mut q[..]), (m.view(&layer.wk), &mut k[..]), (m.view(&layer.wv), &mut v[..])], &xn, b);
            for (i, table) in rope_tables.iter().enumerate() {
                for h in q[i * qd..(i + 1) * qd].chunks_exact_mut(hd) {
                    rope_with(h, table, cfg.rope_neox);
                }
                for h in k[i * kvd..(i + 1) * kvd].chunks_exact_mut(hd) {
                    rope_with(h, table, cfg.rope_neox);
                }
            }
            round_slice(&mut q);
            self.kv.write(li, pos0, &k, &v);
            self.attention(li, pos0, b, &q, &mut att);
            self.matmul(&layer.wo, &att, b, &mut proj);
            add_in_place(&mut x, &proj);
            for i in 0..b {
                rmsnorm(&mut xn[i * d..(i + 1) * d], &x[i * d..(i + 1) * d], &layer.ffn_norm, cfg.eps);
            }
            matmul_many(&mut [(m.view(&layer.gate), &mut gate[..]), (m.view(&layer.up), &mut up[..])], &xn, b);
            swiglu(&mut gate, &up);
            self.matmul(&layer.down, &gate, b, &mut proj);
            add_in_place(&mut x, &proj);
        }
        self.kv.set_len(pos0 + b);
        for i in 0..b {
            rmsnorm(&mut xn[i * d..(i + 1) * d], &x[i * d..(i + 1) * d], &m.output_norm, cfg.eps);
        }
        Ok(xn)
    }

    /// Logits (rows, vocab) of final hidden states (rows, n_embd).
    pub fn logits(&self, hidden: &[f32]) -> Vec<f32> {
        let m = &self.model;
        let rows = hidden.len() / m.cfg.n_embd;
        let mut out = vec![0f32; rows * m.cfg.vocab];
        self.matmul(&m.output, hidden, rows, &mut out);
        out
    }

    /// Feed a prompt in chunks and return the logits of its last position.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        let mut last = Vec::new();
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            last = self.forward(chunk)?;
        }
        let d = self.model.cfg.n_embd;
        Ok(self.logits(&last[last.len() - d..]))
    }

    /// One decode step: logits of `token` appended at the end of the cache.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>, EngineError> {
        let h = self.forward(&[token])?;
        Ok(self.logits(&h))
    }

    /// The matmul entry point of the pipeline.
    fn matmul(&self, w: &Weight, x: &[f32], batch: usize, y: &mut [f32]) {
        let view: WeightView = self.model.view(w);
        matmul(&view, x, batch, y);
    }

    /// Causal attention of `b` queries at positions pos0.. over the cache of layer `li`.
    /// q: (b, n_head * head_dim) -> att: (b, n_head * head_dim).
    fn attention(&self, li: usize, pos0: usize, b: usize, q: &[f32], att: &mut [f32]) {
        let cfg = &self.model.cfg;
        let (hd, nh, kvd) = (cfg.head_dim, cfg.n_head, cfg.kv_dim());
        let group = nh / cfg.n_head_kv;
        let n_all = pos0 + b;
        let keys = self.kv.keys(li, n_all);
        let values = self.kv.values(li, n_all);
        let scale = 1.0 / (hd as f32).sqrt();
        let out_ptr = AttPtr(att.as_mut_ptr());
        // Contiguous ranges of (position, head) pairs per task: neighbouring heads share
        // K/V rows (GQA), so a task keeps them in its own cache.
        let pairs = b * nh;
        let per_thread = if b == 1 { 1 } else { 4 };
        let n_tasks = (per_thread * pool().threads()).min(pairs);
        parallel_for(n_tasks, |task| {
            for idx in task * pairs / n_tasks..(task + 1) * pairs / n_tasks {
                let (i, h) = (idx / nh, idx % nh);
                // SAFETY: pair idx writes only its own head_dim slice of att.
                let out = unsafe { std::slice::from_raw_parts_mut(out_ptr.get().add(idx * hd), hd) };
                let qh = &q[i * nh * hd + h * hd..][..hd];
                // causal: positions 0..=pos0+i
                attend_head(qh, keys, values, pos0 + i + 1, kvd, (h / group) * hd, scale, out);
            }
        });
    }
}
