//! One forward pass of a llama-family model over a batch of consecutive positions. Every
//! heavy op asks the GPU facade first and hands it its CPU twin: the model code never
//! branches on the device, and a decline costs one call.

use crate::cpu::attention::attend_head;
use crate::cpu::f16::round_slice;
use crate::cpu::matmul::{ffn_gated, matmul, matmul_many};
use crate::cpu::ops::{add_in_place, rmsnorm, rope_table, rope_with};
use crate::cpu::pool::{parallel_for, pool};
use crate::error::EngineError;
use crate::gpu::backend::{FfnJob, GraphReadback, MatmulJob, MultiMatmulJob, PrefillGraphJob, TokenGraphJob};
use crate::gpu::race::GraphArm;
use crate::gpu::{scope, Gpu, GraphOutcome};
use crate::kv::KvCache;
use crate::sample::DrawSpec;
use crate::model::llama::{Family, Llama, Weight};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Prompt positions per forward call during prefill: big enough for weight reuse across
/// tokens, small enough that activations stay in cache. A backend's prefill graph may take
/// more per call (`Backend::prefill_rows`).
pub const PREFILL_CHUNK: usize = 256;

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

/// RMSNorm of every w.len()-long row of x in place (heads for q/k norms, rows for the
/// post norms).
fn norm_rows(x: &mut [f32], w: &[f32], eps: f32) {
    let mut tmp = vec![0f32; w.len()];
    for row in x.chunks_exact_mut(w.len()) {
        rmsnorm(&mut tmp, row, w, eps);
        row.copy_from_slice(&tmp);
    }
}

/// A model plus one sequence's state: the host KV cache and, when the token graph runs,
/// the device's mirror of it.
pub struct Session {
    pub model: Arc<Llama>,
    pub kv: KvCache,
    pub gpu: Arc<Gpu>,
    /// The sequence id of this session's device state.
    seq: u64,
    /// Logical length of the sequence; `kv.len()` may lag it while the device mirror leads.
    pos: usize,
    /// How decode tokens run this generation.
    arm: GraphArm,
    /// The graph refused this model once: no per-token retry.
    graph_refused: bool,
    /// Leading layers the graphs run for this model (`Gpu::graph_layers`), asked on the first
    /// graph call: all of them, or a device prefix with the rest on the host.
    graph_layers: Option<usize>,
}

/// How a decode token ran through the graph.
enum Graphed {
    /// Not through the graph: the caller runs the per-op path.
    No,
    /// The whole token: the readback asked for holds the result.
    Whole,
    /// A device prefix, the rest of the layers on the host: the final-normed hidden state.
    Prefix(Vec<f32>),
}

/// A dropped session's device state (its KV mirror) goes with it.
impl Drop for Session {
    fn drop(&mut self) {
        self.gpu.reset_sequence(self.seq);
    }
}

impl Session {
    /// A session with room for `n_ctx` positions (capped by the model's trained context),
    /// on the process GPU facade.
    pub fn new(model: Arc<Llama>, n_ctx: usize) -> Self {
        Self::with_gpu(model, n_ctx, Gpu::global())
    }

    /// The same on a given facade (tests build their own).
    pub fn with_gpu(model: Arc<Llama>, n_ctx: usize, gpu: Arc<Gpu>) -> Self {
        let cfg = &model.cfg;
        let kv = KvCache::new(cfg.n_layer, cfg.kv_dim(), n_ctx.min(cfg.n_ctx_train).max(1));
        Session { model, kv, gpu, seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed), pos: 0, arm: GraphArm::PerOp, graph_refused: false, graph_layers: None }
    }

    pub fn n_ctx(&self) -> usize {
        self.kv.capacity()
    }

    /// Positions in the sequence so far.
    pub fn len(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// Forget positions from `pos` on (0 = reset), on the host and on the device. Rows only
    /// the device mirror held are pulled to the host first; if that fails the sequence keeps
    /// what the host has (check `len()`).
    pub fn truncate(&mut self, pos: usize) {
        if pos >= self.pos {
            return;
        }
        let have = self.kv.len();
        if have < pos && self.gpu.pull_kv(self.seq, have, pos, &mut self.kv).is_err() {
            self.kv.truncate(have);
        }
        self.gpu.reset_sequence(self.seq);
        self.pos = pos.min(self.kv.len());
        self.kv.truncate(self.pos);
    }

    /// Set the logical length after seeding the cache by hand (the scripted test device).
    #[cfg(test)]
    pub(crate) fn set_len_for_tests(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Pick how this generation's decode tokens run (arms switch only between generations).
    pub fn begin_generation(&mut self) -> GraphArm {
        self.arm = if self.graph_refused { GraphArm::PerOp } else { self.gpu.graph_arm() };
        self.arm
    }

    /// Run `tokens` at positions `len()..` and return the final-normed hidden states
    /// (tokens.len(), n_embd).
    pub fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        self.sync_host_kv()?;
        let m = Arc::clone(&self.model);
        let cfg = &m.cfg;
        let b = tokens.len();
        let pos0 = self.pos;
        if pos0 + b > self.kv.capacity() {
            return Err(EngineError::PromptTooLong { tokens: pos0 + b, ctx: self.kv.capacity(), reserve: 0 });
        }
        let mut x = self.embed(tokens)?;
        self.run_layers(&mut x, b, pos0, 0..cfg.n_layer);
        self.pos = pos0 + b;
        self.kv.set_len(self.pos);
        Ok(self.final_norm(&x))
    }

    /// The residual stream's first rows (tokens.len(), n_embd): the tokens' embeddings.
    fn embed(&self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        let cfg = &self.model.cfg;
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= cfg.vocab) {
            return Err(EngineError::BadToken { id: t, vocab: cfg.vocab });
        }
        let mut x = vec![0f32; tokens.len() * cfg.n_embd];
        self.model.embed_rows(tokens, &mut x);
        Ok(x)
    }

    /// The scripted device's device prefix: the residual stream of `tokens` (rows, n_embd)
    /// after the first `layers` layers at the end of the sequence (their K/V rows written
    /// here only).
    #[cfg(test)]
    pub(crate) fn prefix_for_tests(&mut self, tokens: &[u32], layers: usize) -> Vec<f32> {
        let mut x = self.embed(tokens).expect("tokens of the vocabulary");
        let pos = self.pos;
        self.run_layers(&mut x, tokens.len(), pos, 0..layers);
        self.pos += tokens.len();
        x
    }

    /// The final norm of residual rows x (rows, n_embd): the hidden states the head reads.
    fn final_norm(&self, x: &[f32]) -> Vec<f32> {
        let m = &self.model;
        let d = m.cfg.n_embd;
        let mut xn = vec![0f32; x.len()];
        for (o, r) in xn.chunks_exact_mut(d).zip(x.chunks_exact(d)) {
            rmsnorm(o, r, &m.output_norm, m.cfg.eps);
        }
        xn
    }

    /// Layers `layers` of the residual rows x (b, n_embd) at positions pos0.., in place, each
    /// writing its K and V rows into the host cache (whose length the caller sets).
    fn run_layers(&mut self, x: &mut [f32], b: usize, pos0: usize, layers: std::ops::Range<usize>) {
        let m = Arc::clone(&self.model);
        let cfg = &m.cfg;
        let d = cfg.n_embd;
        let (qd, kvd, hd) = (cfg.q_dim(), cfg.kv_dim(), cfg.head_dim);
        let mut xn = vec![0f32; b * d]; // (b, n_embd) normed input
        let mut q = vec![0f32; b * qd]; // (b, n_head * head_dim)
        let mut k = vec![0f32; b * kvd]; // (b, n_head_kv * head_dim)
        let mut v = vec![0f32; b * kvd];
        let mut att = vec![0f32; b * qd]; // (b, n_head * head_dim) attention output
        let mut proj = vec![0f32; b * d]; // (b, n_embd) projections back to the stream
        // RoPE tables per position, one set per distinct base (global and local layers).
        let tables_for = |base: f32| -> Vec<_> { (0..b).map(|i| rope_table(pos0 + i, cfg.rope_dims, base)).collect() };
        let global_tables = tables_for(cfg.rope_base);
        let local_tables = cfg.sliding.map(|s| tables_for(s.rope_base));
        for (li, layer) in m.layers.iter().enumerate().take(layers.end).skip(layers.start) {
            let rope_tables = if cfg.is_local(li) { local_tables.as_ref().unwrap_or(&global_tables) } else { &global_tables };
            let _layer = scope::in_layer(Some(li as u32));
            for i in 0..b {
                rmsnorm(&mut xn[i * d..(i + 1) * d], &x[i * d..(i + 1) * d], &layer.attn_norm, cfg.eps);
            }
            self.qkv(&[layer.wq, layer.wk, layer.wv], &xn, b, &mut [&mut q[..], &mut k[..], &mut v[..]]);
            if let (Some(qn), Some(kn)) = (&layer.q_norm, &layer.k_norm) {
                norm_rows(&mut q, qn, cfg.eps);
                norm_rows(&mut k, kn, cfg.eps);
            }
            for (i, table) in rope_tables.iter().enumerate() {
                for h in q[i * qd..(i + 1) * qd].chunks_exact_mut(hd) {
                    rope_with(h, table, cfg.rope_neox);
                }
                for h in k[i * kvd..(i + 1) * kvd].chunks_exact_mut(hd) {
                    rope_with(h, table, cfg.rope_neox);
                }
            }
            // Gemma scales the query itself (score scale 1); llama scales the scores.
            let score_scale = if cfg.family == Family::Llama { cfg.attn_scale } else { 1.0 };
            if cfg.family != Family::Llama {
                q.iter_mut().for_each(|v| *v *= cfg.attn_scale);
            }
            round_slice(&mut q);
            self.kv.write(li, pos0, &k, &v);
            self.attention(li, pos0, b, &q, score_scale, cfg.layer_attention(li).1, &mut att);
            self.matmul(&layer.wo, &att, b, &mut proj);
            if let Some(pn) = &layer.post_attn_norm {
                norm_rows(&mut proj, pn, cfg.eps);
            }
            add_in_place(x, &proj);
            for i in 0..b {
                rmsnorm(&mut xn[i * d..(i + 1) * d], &x[i * d..(i + 1) * d], &layer.ffn_norm, cfg.eps);
            }
            self.ffn(layer.gate, layer.up, layer.down, &xn, b, &mut proj);
            if let Some(pn) = &layer.post_ffn_norm {
                norm_rows(&mut proj, pn, cfg.eps);
            }
            add_in_place(x, &proj);
        }
    }

    /// Logits (rows, vocab) of final hidden states (rows, n_embd).
    pub fn logits(&self, hidden: &[f32]) -> Vec<f32> {
        let m = &self.model;
        let rows = hidden.len() / m.cfg.n_embd;
        let mut out = vec![0f32; rows * m.cfg.vocab];
        self.matmul(&m.output, hidden, rows, &mut out);
        out
    }

    /// Feed a prompt in chunks and return the logits of its last position. Where the facade
    /// runs prompts as batched prefill graphs, each chunk (as many rows as the backend's graph
    /// takes, `Gpu::prefill_rows`) is one device submission (only the last one reads its logits
    /// back); a chunk the graph declines runs per op.
    pub fn prefill(&mut self, tokens: &[u32]) -> Result<Vec<f32>, EngineError> {
        if tokens.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        let rows = self.gpu.prefill_rows(&self.model);
        let chunks = tokens.len().div_ceil(rows);
        let mut last = Vec::new();
        for (i, chunk) in tokens.chunks(rows).enumerate() {
            let mut logits = Vec::new();
            if self.graph_prefill(chunk, (i + 1 == chunks).then_some(&mut logits))? {
                if i + 1 == chunks {
                    return Ok(logits);
                }
                continue;
            }
            last = self.forward(chunk)?;
        }
        let d = self.model.cfg.n_embd;
        Ok(self.logits(&last[last.len() - d..]))
    }

    /// Try one prompt chunk through the batched prefill graph: true when it completed (the
    /// sequence moved on; `logits`, when given, holds the last position's), false when the
    /// facade does not run prompts that way or the graph declined (the caller runs the chunk
    /// per op); a device failure resets the sequence. Where only a device prefix fits, the
    /// chunk's rows run its layers on the device and the rest on the host.
    fn graph_prefill(&mut self, chunk: &[u32], logits: Option<&mut Vec<f32>>) -> Result<bool, EngineError> {
        if self.graph_refused || !self.gpu.prefill_graph_enabled() {
            return Ok(false);
        }
        let layers = self.device_layers();
        let model = Arc::clone(&self.model);
        let cfg = &model.cfg;
        if layers == 0 {
            return Ok(false);
        }
        if self.pos + chunk.len() > self.kv.capacity() {
            return Err(EngineError::PromptTooLong { tokens: self.pos + chunk.len(), ctx: self.kv.capacity(), reserve: 0 });
        }
        if let Some(&t) = chunk.iter().find(|&&t| t as usize >= cfg.vocab) {
            return Err(EngineError::BadToken { id: t, vocab: cfg.vocab });
        }
        let pos0 = self.pos;
        let job = PrefillGraphJob { model: &model, seq: self.seq, tokens: chunk, pos: pos0, host_kv: &self.kv, layers };
        if layers < cfg.n_layer {
            let mut x = vec![0f32; chunk.len() * cfg.n_embd]; // (rows, n_embd) the residual after the prefix
            let outcome = self.gpu.prefill_graph(&job, GraphReadback::Hidden(&mut x));
            if !self.after_graph(outcome, chunk.len())? {
                return Ok(false);
            }
            self.run_layers(&mut x, chunk.len(), pos0, layers..cfg.n_layer);
            if let Some(l) = logits {
                *l = self.logits(&self.final_norm(&x[x.len() - cfg.n_embd..]));
            }
            return Ok(true);
        }
        let mut pick = 0;
        let out = match logits {
            Some(l) => {
                l.resize(cfg.vocab, 0.0);
                GraphReadback::Logits(l)
            }
            None => GraphReadback::Argmax(&mut pick),
        };
        let outcome = self.gpu.prefill_graph(&job, out);
        self.after_graph(outcome, chunk.len())
    }

    /// Leading layers the graphs run for this model (`Gpu::graph_layers`), asked once.
    fn device_layers(&mut self) -> usize {
        *self.graph_layers.get_or_insert_with(|| self.gpu.graph_layers(&self.model))
    }

    /// Apply a graph call's outcome: completed, the sequence moved `rows` on (true); declined,
    /// the per-op path runs (false; a graph that cannot be built is not asked again); failed,
    /// the sequence resets and the error returns.
    fn after_graph(&mut self, outcome: GraphOutcome, rows: usize) -> Result<bool, EngineError> {
        match outcome {
            GraphOutcome::Completed => {
                self.pos += rows;
                Ok(true)
            }
            GraphOutcome::Declined(reason) => {
                if crate::gpu::refuses_model(reason) {
                    self.graph_refused = true;
                }
                Ok(false)
            }
            GraphOutcome::Failed(e) => {
                self.truncate(0);
                Err(EngineError::DeviceFailed(e))
            }
        }
    }

    /// One decode step: logits of `token` appended at the end of the sequence. Runs the
    /// whole-token graph when this generation's arm is the graph; a decline falls back to
    /// the per-op path for this token; a device failure resets the sequence.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>, EngineError> {
        let mut logits = Vec::new();
        let vocab = self.model.cfg.vocab;
        let host = self.decode_step(token, |gpu, job| {
            logits.resize(vocab, 0.0);
            gpu.token_graph(job, GraphReadback::Logits(&mut logits))
        })?;
        Ok(host.unwrap_or(logits))
    }

    /// One decode step for greedy sampling: the argmax (`sample::argmax`) of the logits of
    /// `token` appended at the end of the sequence. Through the graph only the index comes
    /// back from the device; otherwise as `step`.
    pub fn step_greedy(&mut self, token: u32) -> Result<u32, EngineError> {
        let mut best = 0;
        let host = self.decode_step(token, |gpu, job| gpu.token_graph(job, GraphReadback::Argmax(&mut best)))?;
        Ok(host.map_or(best, |l| crate::sample::argmax(&l)))
    }

    /// One decode step for a sampler that needs only the k largest logits
    /// (`Sampler::candidates_needed`): those candidates of `token` appended at the end of the
    /// sequence, as `sample::top_candidates` gives them. Through the graph the device picks
    /// them where its backend can (only k pairs come back); otherwise as `step`. `draw`
    /// (`Sampler::draw_spec`) lets a backend draw the next token on the device as the
    /// sampler will and start it before the host has drawn (a different host draw drops it).
    pub fn step_top_k(&mut self, token: u32, k: usize, draw: Option<DrawSpec>) -> Result<Vec<(u32, f32)>, EngineError> {
        let mut cand = Vec::new();
        let host = self.decode_step(token, |gpu, job| gpu.token_graph(job, GraphReadback::TopK(k, draw, &mut cand)))?;
        Ok(host.map_or(cand, |l| crate::sample::top_candidates(&l, k)))
    }

    /// `token` through the token graph with `run` (`graph_step`): None where the whole token
    /// ran there (the readback `run` asked for holds the result), else the token's logits
    /// from the host (after a device prefix, or by the per-op path).
    fn decode_step(&mut self, token: u32, run: impl FnOnce(&Gpu, &TokenGraphJob) -> GraphOutcome) -> Result<Option<Vec<f32>>, EngineError> {
        let h = match self.graph_step(token, run)? {
            Graphed::Whole => return Ok(None),
            Graphed::Prefix(h) => h,
            Graphed::No => self.forward(&[token])?,
        };
        Ok(Some(self.logits(&h)))
    }

    /// Try `token` through the token graph: the whole token with `run`, or where only a
    /// device prefix fits, the prefix on the device and the remaining layers on the host.
    /// `No` when the graph is not this generation's arm or declined (the caller runs the
    /// per-op path); a device failure resets the sequence.
    fn graph_step(&mut self, token: u32, run: impl FnOnce(&Gpu, &TokenGraphJob) -> GraphOutcome) -> Result<Graphed, EngineError> {
        if self.arm != GraphArm::Graph || self.graph_refused {
            return Ok(Graphed::No);
        }
        if self.pos >= self.kv.capacity() {
            return Err(EngineError::PromptTooLong { tokens: self.pos + 1, ctx: self.kv.capacity(), reserve: 0 });
        }
        if token as usize >= self.model.cfg.vocab {
            return Err(EngineError::BadToken { id: token, vocab: self.model.cfg.vocab });
        }
        let n_layer = self.model.cfg.n_layer;
        let layers = self.device_layers();
        if layers == 0 {
            return Ok(Graphed::No);
        }
        let pos = self.pos;
        let mut x = vec![0f32; self.model.cfg.n_embd]; // (n_embd) the residual after a prefix
        let job = TokenGraphJob { model: &self.model, seq: self.seq, token, pos, host_kv: &self.kv, layers };
        let outcome = if layers == n_layer { run(&self.gpu, &job) } else { self.gpu.token_graph(&job, GraphReadback::Hidden(&mut x)) };
        if !self.after_graph(outcome, 1)? {
            return Ok(Graphed::No);
        }
        if layers == n_layer {
            return Ok(Graphed::Whole);
        }
        // The host cache holds every position of the host's layers (their rows are written
        // here, token by token); the prefix's rows stay in the device mirror until pulled.
        self.run_layers(&mut x, 1, pos, layers..n_layer);
        Ok(Graphed::Prefix(self.final_norm(&x)))
    }

    /// Bring the host cache up to the logical length (rows the device mirror computed).
    fn sync_host_kv(&mut self) -> Result<(), EngineError> {
        let have = self.kv.len();
        if have < self.pos {
            if let Err(e) = self.gpu.pull_kv(self.seq, have, self.pos, &mut self.kv) {
                self.truncate(0);
                return Err(EngineError::DeviceFailed(format!("reading the device KV mirror back: {e}")));
            }
        }
        Ok(())
    }

    /// The matmul entry point.
    fn matmul(&self, w: &Weight, x: &[f32], batch: usize, y: &mut [f32]) {
        let m = &self.model;
        let job = MatmulJob { w: m.weight_arg(w), x, batch };
        self.gpu.matmul(&job, y, |y| matmul(&job.w.view, x, batch, y));
    }

    /// Several projections of one input (QKV).
    fn qkv(&self, ws: &[Weight], x: &[f32], batch: usize, outs: &mut [&mut [f32]]) {
        let m = &self.model;
        let job = MultiMatmulJob { ws: ws.iter().map(|w| m.weight_arg(w)).collect(), x, batch };
        self.gpu.matmul_many(&job, outs, |outs| {
            let mut jobs: Vec<_> = job.ws.iter().zip(outs.iter_mut()).map(|(w, o)| (w.view, &mut **o)).collect();
            matmul_many(&mut jobs, x, batch);
        });
    }

    /// The dense gated FFN: out = down(act(gate(x)) * up(x)), act as the model names it.
    fn ffn(&self, gate: Weight, up: Weight, down: Weight, x: &[f32], batch: usize, out: &mut [f32]) {
        let m = &self.model;
        let act = m.cfg.act;
        let job = FfnJob { gate: m.weight_arg(&gate), up: m.weight_arg(&up), down: m.weight_arg(&down), act, x, batch };
        self.gpu.ffn(&job, out, |out| ffn_gated(&job.gate.view, &job.up.view, &job.down.view, act, x, batch, out));
    }

    /// Causal attention of `b` queries at positions pos0.. over the cache of layer `li`,
    /// optionally over a sliding window of positions. q: (b, n_head * head_dim) ->
    /// att: (b, n_head * head_dim). Per-op attention runs on the CPU; on a device it runs
    /// inside the token graph.
    #[allow(clippy::too_many_arguments)]
    fn attention(&self, li: usize, pos0: usize, b: usize, q: &[f32], scale: f32, window: Option<usize>, att: &mut [f32]) {
        let cfg = &self.model.cfg;
        let (hd, nh, kvd) = (cfg.head_dim, cfg.n_head, cfg.kv_dim());
        let group = nh / cfg.n_head_kv;
        let n_all = pos0 + b;
        let keys = self.kv.keys(li, n_all);
        let values = self.kv.values(li, n_all);
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
                // causal: positions 0..=pos0+i, the last `window` of them on local layers
                let end = pos0 + i + 1;
                let start = window.map_or(0, |w| end.saturating_sub(w));
                attend_head(qh, keys, values, (start, end), kvd, (h / group) * hd, scale, out);
            }
        });
    }
}
