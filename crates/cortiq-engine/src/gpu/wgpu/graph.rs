//! The whole-token decode graph on wgpu (SPEC section 8): every layer of a llama-family
//! model for one token in ONE command buffer with ONE compute pass (QKV with the RMSNorm
//! fused into its loads, or on wide models after a norm dispatch of its own, split attention
//! over the mirror with the token's RoPE and KV-mirror append, the output projection added
//! into the residual, gate/up normed the same way, down with SiLU(gate) * up fused into its
//! loads and added into the residual), the final norm and the head; one readback of the
//! logits (or of their argmax or top-k). The dispatch list and its bind groups are built
//! once per (model, sequence) and only re-encoded per token; token-dependent values
//! (position, attention chunks) travel in a small uniform block written before the
//! submission. The embedding row is decoded on the device where the embedding is resident
//! in one piece (else the host writes it). The batched prefill graph (`graph/prefill.rs`)
//! shares the model's buffers, the sequence's mirror and the frame (`on_graph`) with it;
//! Gemma 3's block records its own token (`graph/gemma.rs`) into the same frame.

use super::multi::{self, MultiIo};
use super::q8_out::{self, Int8Units, Q8Out, Q8OutIo, UnitSetting};
use super::qkv_attn::{self, qkv_attn_wanted, QkvAttnIo};
use super::argmax::DeviceArgmax;
use super::top_k::{key_staging, read_candidates, DeviceTopK};
use super::plan::{self, Grid, MatvecIo, Params, Planned, Uniform};
use super::{int8_layers, Resident, Unfit, Variant, WgpuBackend, XMode, Q8_CODECS};
use crate::gpu::backend::{DeviceOutcome, GraphRead, GraphReadback, TokenGraphJob, WeightArg};
use crate::gpu::memory::model_key;
use crate::gpu::transcode::{planar_codec, planar_supports};
use crate::kv::KvCache;
use crate::model::llama::{Llama, Weight};
use crate::model::Family;
use half::slice::HalfFloatSliceExt;
use std::collections::{BTreeMap, HashMap};
use wgpu::util::DeviceExt;

mod gemma;
mod prefill;

/// Positions per split-attention workgroup (`CHUNK` in attn_chunk.wgsl).
const ATT_CHUNK: usize = 64;
/// Largest head size the attention kernels hold in workgroup memory.
const MAX_HEAD_DIM: usize = 256;

/// The per-token uniform block (`Step` in rope_store/attn_*.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct StepBlock {
    pos: u32,
    n_head: u32,
    n_head_kv: u32,
    head_dim: u32,
    rot: u32,
    neox: u32,
    chunks: u32,
    /// Nonzero: the decode token's RoPE and mirror append run in the attention split.
    fold: u32,
    base: f32,
    scale: f32,
    /// A prompt chunk's rows (the matrix-unit prompt attention; 0 in the token graph).
    rows: u32,
    /// A sliding-window layer's window in positions, the query's own included (0: none).
    window: u32,
    /// Gemma 3's q/k head norms' epsilon (`norm_rope.wgsl`, `attn_split_normed`), then
    /// padding to 16 words.
    eps: f32,
    pad: [u32; 3],
}

/// A decode token's RoPE for `WgpuBackend::decode_attention_with_rope`: the rotary width, the
/// pairing (NeoX halves or adjacent), the frequency base, and whether the attention split
/// applies it (else rope_store before).
#[derive(Clone, Copy, Debug)]
pub struct RopeSpec {
    pub rot: usize,
    pub neox: bool,
    pub base: f32,
    pub fold: bool,
}

/// What `WgpuBackend::decode_attention_with_rope` gives back: the attention output (n_head *
/// head_dim) and the mirror's K and V rows (kv_dim each) at the token's position.
pub struct RopedAttention {
    pub out: Vec<f32>,
    pub k_row: Vec<f32>,
    pub v_row: Vec<f32>,
}

/// `NormParams` in norm_params.wgsl (the norm kernels' uniform block).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct NormBlock {
    pub n: u32,
    pub add: u32,
    pub eps: f32,
    /// First input row (workgroup i normalizes row `row0 + i` into output row i).
    pub row0: u32,
}

/// `QuantParams` in quant.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct QuantBlock {
    cols: u32,
    /// One of `QUANT_PLAIN`, `QUANT_SILU`, `QUANT_NORM`, `QUANT_NORM_DEFERRED`.
    mode: u32,
    eps: f32,
    pad: u32,
}

/// What the quantizer makes of its input first (`mode` in quant.wgsl): x as it is,
/// SiLU(x) * x2 (the gated FFN's hidden state), or x RMS-normed with the weights x2.
pub(super) const QUANT_PLAIN: u32 = 0;
pub(super) const QUANT_SILU: u32 = 1;
pub(super) const QUANT_NORM: u32 = 2;
pub(super) const QUANT_NORM_DEFERRED: u32 = 3;

/// The quantizer (quant.wgsl) over `rows` rows of `cols` values of x (and x2) into xq / xd,
/// its uniform block at `at`: one invocation per 32-value unit, 256 to a workgroup.
#[allow(clippy::too_many_arguments)]
pub(super) fn quantize_rows<'b>(ctx: &super::WgpuContext, x: &'b wgpu::Buffer, x2: &'b wgpu::Buffer, xq: &'b wgpu::Buffer, xd: &'b wgpu::Buffer, at: u64, cols: u32, rows: u32) -> Planned<'b> {
    Planned { label: "quantize", pipe: ctx.quant.clone(), bufs: vec![x, x2, xq, xd], uniform: Uniform::Slot(at), grid: Grid::Fixed((cols / 32).div_ceil(256), rows, 1) }
}

/// The same for one row.
fn quantize<'b>(ctx: &super::WgpuContext, x: &'b wgpu::Buffer, x2: &'b wgpu::Buffer, xq: &'b wgpu::Buffer, xd: &'b wgpu::Buffer, at: u64, cols: u32) -> Planned<'b> {
    quantize_rows(ctx, x, x2, xq, xd, at, cols, 1)
}

/// The uniform block of a quantizer over rows of `cols` values in `mode` (`QUANT_*`; `eps`
/// for the norm), added to `params`.
pub(super) fn quant_slot(params: &mut Params, cols: u32, mode: u32, eps: f32) -> u64 {
    params.slot(bytemuck::bytes_of(&QuantBlock { cols, mode, eps, pad: 0 }))
}

/// What a graph call copies out for the host: the logits (vocab), their argmax, the
/// sampler's top-k candidates, or the residual stream after a device prefix (its floats:
/// rows x n_embd); the argmax and the candidates are picked by dispatches encoded after the
/// head for that call only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Readback {
    Logits(usize),
    Argmax,
    /// The sampler's k candidates, picked on the device (`top_k.rs`), and whether the device
    /// also draws the next token from them (the caller gave the sampler's draw spec).
    TopK(usize, bool),
    Hidden(usize),
}

impl Readback {
    /// The kind `out` asks for, for a model with `vocab` logits (the logits for more of the
    /// sampler's candidates than the device picks: `GraphReadback::fill` picks them).
    pub(super) fn of(out: &GraphReadback, vocab: usize) -> Readback {
        if let Some(k) = out.device_top_k() {
            return Readback::TopK(k, out.device_draw().is_some());
        }
        match out {
            GraphReadback::Logits(_) | GraphReadback::TopK(..) => Readback::Logits(vocab),
            GraphReadback::Argmax(_) => Readback::Argmax,
            GraphReadback::Hidden(h) => Readback::Hidden(h.len()),
        }
    }
}

/// Device buffers of one model's graph.
pub(super) struct ModelGraph {
    /// Identifies the model the buffers were built for.
    model_key: u64,
    /// Leading layers the graphs run (all of them, or a device prefix).
    layers: usize,
    x: wgpu::Buffer,      // (n_embd) residual stream
    xn: wgpu::Buffer,     // (n_embd) normed, for the head
    zero: wgpu::Buffer,   // (n_embd) the residual of the head's norm (which adds nothing)
    q: wgpu::Buffer,      // (n_head * head_dim)
    k: wgpu::Buffer,      // (kv_dim)
    v: wgpu::Buffer,      // (kv_dim)
    att: wgpu::Buffer,    // (n_head * head_dim)
    g: wgpu::Buffer,      // (n_ff) gate
    u: wgpu::Buffer,      // (n_ff)
    /// Whether the token graph's matvecs take int8 activations (`WgpuBackend::int8_graph`
    /// and every matrix of the layers with an int8 kernel); then a stage's input is quantized
    /// into xq (widest input / 32 units of 32 bytes) and xd (units of (d, d * sum, sum, 0)).
    int8: bool,
    xq: wgpu::Buffer,
    xd: wgpu::Buffer,
    /// Down's int8 input where gate and up write it themselves (`q8_out.rs`): (n_ff / 32)
    /// units of 32 bytes, and their (d, d * sum, sum, 0); apart from xq / xd, which they read.
    hq: wgpu::Buffer,
    hd: wgpu::Buffer,
    /// QKV's and gate/up's normed int8 input where the output and down projections write it
    /// (`XMode::Int8Norm`): (n_embd / 32) units of x * the norm's weights, and their (d,
    /// d * sum, sum, sum of x's squares).
    nq: wgpu::Buffer,
    nd: wgpu::Buffer,
    logits: wgpu::Buffer, // (vocab)
    best: wgpu::Buffer,   // (1) u32: the logits' argmax, or the token drawn from their candidates
    /// The greedy pick of `logits` into `best`.
    argmax: DeviceArgmax,
    /// The sampler's candidates picked from `logits` (and a token drawn from them into
    /// `best`).
    top: DeviceTopK,
    /// (1) u32: the token whose embedding row the graph's first dispatch decodes, where the
    /// embedding is decoded on the device (`Recorded::device_embed`).
    tok: wgpu::Buffer,
    /// Split-attention partials (n_head, chunks, head_dim + 2), sized for `capacity`.
    part: wgpu::Buffer,
    capacity: usize,
    /// Per layer (attn_norm, ffn_norm), then the output norm.
    norms: Vec<(wgpu::Buffer, wgpu::Buffer)>,
    out_norm: wgpu::Buffer,
    step: wgpu::Buffer,
    /// (capacity) the step block of every position, copied into `step` at the start of each
    /// token's command buffer (no host write between tokens).
    steps: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// Where a device prefix's residual stream is read back from (up to a prefill chunk's
    /// rows of n_embd floats; a stub in a whole model's graph, which never reads it).
    hidden_staging: wgpu::Buffer,
    /// The prefill graph's buffers, made on its first chunk.
    prefill: Option<prefill::PrefillBuffers>,
    /// The Gemma 3 block's norms, stage output and sliding-window step block (`gemma.rs`);
    /// None for the llama block.
    gemma: Option<gemma::GemmaBuffers>,
    /// Under `CMF_GRAPH_HOSTPROF=1` with timestamp queries: the token pass's begin/end
    /// timestamps (query set, resolve buffer, readback buffer).
    timer: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
    /// Under `CMF_GRAPH_HOSTPROF=2` where timestamps can be written inside a pass: one
    /// before each dispatch and one after the last (query set, resolve, readback, count).
    stamps: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer, u32)>,
}

/// A sequence's KV mirror (per layer K and V rows of kv_dim f32) and, once recorded, the
/// token's dispatches bound to it.
pub(super) struct Mirror {
    k: Vec<wgpu::Buffer>,
    v: Vec<wgpu::Buffer>,
    len: usize,
    recorded: Option<Recorded>,
    /// The next token's command buffer, encoded while the GPU ran the previous token (it
    /// depends only on the position and whether the logits or only their argmax are read
    /// back; the token enters through the buffers written first).
    prepared: Option<(usize, Readback, wgpu::CommandBuffer)>,
    /// The prefill graph's dispatches for the last chunk size, bound to this mirror.
    prefill: Option<prefill::PrefillPlan>,
    /// A greedy token already queued on the device behind the one before it, its token
    /// copied on the device from that one's argmax (`WgpuBackend::run_graph`).
    ahead: Option<Ahead>,
    /// Where this sequence's argmax is read back from (4 bytes each), by the position's
    /// parity: a token queued ahead copies into the other one than the token before it, and
    /// other sequences' tokens queued in between into their own.
    best_staging: [wgpu::Buffer; 2],
    /// Where this sequence's top-k keys are read back from, by the position's parity as
    /// `best_staging`.
    keys_staging: [wgpu::Buffer; 2],
}

/// A token queued ahead: its position, what it reads back, its submission, and (once the
/// token before it was read back) the token it embeds.
pub(super) struct Ahead {
    pos: usize,
    kind: Readback,
    submission: wgpu::SubmissionIndex,
    token: Option<u32>,
}

/// How a call's command buffer starts and ends: whether its token is copied from the
/// previous token's device pick (argmax or draw; else the host wrote its input), and the
/// staging buffers it copies its pick and its top-k keys into.
#[derive(Clone, Copy)]
pub(super) struct TokenIo<'a> {
    pub from_device: bool,
    pub best_to: &'a wgpu::Buffer,
    pub keys_to: &'a wgpu::Buffer,
}

impl Mirror {
    /// The staging buffers of the token at `pos`, its command buffer's token taken from the
    /// previous token's device pick or not.
    pub(super) fn io(&self, pos: usize, from_device: bool) -> TokenIo<'_> {
        TokenIo { from_device, best_to: &self.best_staging[pos % 2], keys_to: &self.keys_staging[pos % 2] }
    }
}

impl Readback {
    /// Whether a token can be queued behind this one on its device pick.
    fn picks_on_device(self) -> bool {
        matches!(self, Readback::Argmax | Readback::TopK(_, true))
    }
}

/// One token's dispatches with their bind groups (and the uniform slots they point into).
struct Recorded {
    dispatches: Vec<(wgpu::ComputePipeline, wgpu::BindGroup, Grid)>,
    /// What each dispatch does (per-kernel profile).
    labels: Vec<&'static str>,
    /// Weight bytes per token by label (`GraphProfile::stage_bytes`).
    stage_bytes: BTreeMap<&'static str, u64>,
    /// Whether the first dispatch decodes the embedding row of the token in `tok` (else the
    /// host writes the row into x).
    device_embed: bool,
    /// Where the recording fell back from a faster form, and why (`GraphProfile::graph_notes`).
    fallbacks: Vec<String>,
    _params: wgpu::Buffer,
}

impl Recorded {
    /// Bind a plan's dispatches once (its uniform slots uploaded into their own buffer), to
    /// be re-encoded for every call.
    fn bind(device: &wgpu::Device, plan: Vec<Planned>, params: &Params, stage_bytes: BTreeMap<&'static str, u64>, fallbacks: Vec<String>) -> Recorded {
        let pbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("graph-params"), contents: &params.0, usage: wgpu::BufferUsages::UNIFORM });
        let groups = plan::bind(device, &plan, &pbuf);
        let device_embed = plan.first().is_some_and(|p| p.label == "embed");
        Recorded { labels: plan.iter().map(|p| p.label).collect(), stage_bytes, device_embed, fallbacks, dispatches: plan.into_iter().zip(groups).map(|(p, b)| (p.pipe, b, p.grid)).collect(), _params: pbuf }
    }
}

/// The matrices a graph of the first `layers` layers streams: per layer wq, wk, wv, wo,
/// gate, up, down; then, when it runs them all, the head.
fn graph_weights(m: &Llama, layers: usize) -> Vec<Weight> {
    let mut ws: Vec<Weight> = m.layers[..layers].iter().flat_map(|l| l.matrices()).collect();
    if layers == m.layers.len() {
        ws.push(m.output);
    }
    ws
}

/// Whether the token graph normalizes in dispatches of their own for a model this wide
/// (rather than in the matvecs that read the normed vector).
fn separate_norm(n_embd: u32) -> bool {
    n_embd >= super::context::WIDE_COLS
}

/// Why this model cannot run as a graph, if it cannot.
fn unsupported(m: &Llama, capacity: usize) -> Option<&'static str> {
    let c = &m.cfg;
    match c.family {
        Family::Llama if c.sliding.is_some() || c.qk_norm || c.post_norms => return Some("cannot build a graph: a llama block with Gemma's norms or windows has no wgpu graph"),
        Family::Llama if c.act != crate::gpu::backend::Activation::Silu => return Some("cannot build a graph: only the SiLU FFN is in the wgpu graph of the llama block"),
        Family::Llama => {}
        Family::Gemma3 => {
            if let Some(why) = gemma::unsupported(c) {
                return Some(why);
            }
        }
    }
    if c.head_dim > MAX_HEAD_DIM || !c.head_dim.is_multiple_of(4) || !c.rope_dims.is_multiple_of(2) || !c.n_head.is_multiple_of(c.n_head_kv.max(1)) {
        return Some("cannot build a graph: head geometry beyond the attention kernels");
    }
    if capacity.checked_mul(c.kv_dim()).is_none_or(|n| n >= u32::MAX as usize / 4) || !c.n_ff.is_multiple_of(4) || !c.n_embd.is_multiple_of(4) || !c.q_dim().is_multiple_of(4) {
        return Some("cannot build a graph: context or widths beyond 32-bit indexing");
    }
    if graph_weights(m, m.layers.len()).iter().any(|w| !planar_supports(w.codec, w.cols)) {
        return Some("cannot build a graph: a weight codec has no wgpu kernel");
    }
    None
}

/// Where a graph call lands: the model, the sequence and its position, and the host cache
/// that seeds the mirror when the mirror does not hold exactly `pos` rows.
pub(super) struct At<'a> {
    pub model: &'a Llama,
    pub seq: u64,
    pub pos: usize,
    pub host_kv: &'a KvCache,
    /// Leading layers the call runs (the model's count, or a device prefix's).
    pub layers: usize,
}

/// Name the dispatches planned since `from`.
fn relabel(p: &mut [Planned], from: usize, label: &'static str) {
    p[from..].iter_mut().for_each(|d| d.label = label);
}

/// The per-call uniform block for a row (or a prompt chunk's first row) at `pos`; `fold`:
/// the attention split applies the token's RoPE and appends its K/V (`WgpuBackend::rope_fold`).
pub(super) fn step_block(m: &Llama, pos: usize, chunks: u32, fold: bool) -> StepBlock {
    let c = &m.cfg;
    StepBlock { pos: pos as u32, n_head: c.n_head as u32, n_head_kv: c.n_head_kv as u32, head_dim: c.head_dim as u32, rot: c.rope_dims as u32, neox: u32::from(c.rope_neox), chunks, fold: u32::from(fold), base: c.rope_base, scale: c.attn_scale, rows: 0, window: 0, eps: c.eps, pad: [0; 3] }
}

impl WgpuBackend {
    pub(super) fn storage_buf(&self, label: &str, floats: usize) -> wgpu::Buffer {
        let size = (floats.max(4) * 4).next_multiple_of(16) as u64;
        self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false })
    }

    pub(super) fn const_buf(&self, label: &str, data: &[f32]) -> wgpu::Buffer {
        self.ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytemuck::cast_slice(data), usage: wgpu::BufferUsages::STORAGE })
    }

    fn build_graph(&self, m: &Llama, capacity: usize, model_key: u64, layers: usize) -> ModelGraph {
        let c = &m.cfg;
        let llama = c.family == Family::Llama;
        let int8 = llama && super::int8_graph_wanted(self.int8_graph, self.info.q8_matvec) && int8_layers(&m.layers[..layers]);
        let widest = c.n_embd.max(c.q_dim()).max(c.n_ff);
        let chunks = capacity.div_ceil(ATT_CHUNK);
        let dev = &self.ctx.device;
        let logits = self.storage_buf("logits", c.vocab);
        let best = self.storage_buf("best", 1);
        ModelGraph {
            model_key,
            layers,
            x: self.storage_buf("x", c.n_embd),
            xn: self.storage_buf("xn", c.n_embd),
            zero: self.storage_buf("zero", c.n_embd),
            q: self.storage_buf("q", c.q_dim()),
            k: self.storage_buf("k", c.kv_dim()),
            v: self.storage_buf("v", c.kv_dim()),
            att: self.storage_buf("att", c.q_dim()),
            g: self.storage_buf("gate", c.n_ff),
            u: self.storage_buf("up", c.n_ff),
            int8,
            xq: self.storage_buf("xq", if int8 { widest / 4 } else { 1 }),
            xd: self.storage_buf("xd", if int8 { widest / 8 } else { 1 }),
            hq: self.storage_buf("hq", if int8 { c.n_ff / 4 } else { 1 }),
            hd: self.storage_buf("hd", if int8 { c.n_ff / 8 } else { 1 }),
            nq: self.storage_buf("nq", if int8 { c.n_embd / 4 } else { 1 }),
            nd: self.storage_buf("nd", if int8 { c.n_embd / 8 } else { 1 }),
            top: DeviceTopK::new(&self.ctx, &logits, &best, c.vocab),
            argmax: DeviceArgmax::new(&self.ctx, &logits, &best, c.vocab),
            logits,
            best,
            tok: self.storage_buf("tok", 1),
            part: self.storage_buf("part", c.n_head * chunks * (c.head_dim + 2)),
            capacity,
            prefill: None,
            norms: m.layers.iter().map(|l| (self.const_buf("attn_norm", &l.attn_norm), self.const_buf("ffn_norm", &l.ffn_norm))).collect(),
            out_norm: self.const_buf("output_norm", &m.output_norm),
            step: dev.create_buffer(&wgpu::BufferDescriptor { label: Some("step"), size: std::mem::size_of::<StepBlock>() as u64, usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false }),
            steps: {
                let blocks: Vec<StepBlock> = (0..capacity.max(1)).map(|pos| step_block(m, pos, (pos + 1).div_ceil(ATT_CHUNK) as u32, self.rope_fold)).collect();
                dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("steps"), contents: bytemuck::cast_slice(&blocks), usage: wgpu::BufferUsages::COPY_SRC })
            },
            gemma: (!llama).then(|| self.gemma_buffers(m, capacity)),
            staging: dev.create_buffer(&wgpu::BufferDescriptor { label: Some("logits-read"), size: (c.vocab * 4) as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false }),
            hidden_staging: dev.create_buffer(&wgpu::BufferDescriptor { label: Some("hidden-read"), size: if layers < m.layers.len() { (prefill::PREFILL_ROWS * c.n_embd * 4) as u64 } else { 16 }, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false }),
            stamps: (crate::gpu::hostprof_level() == 2 && dev.features().contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)).then(|| {
                // Dispatches per token: at most 16 per layer, with row-split chunks; 2 spare.
                let n = (m.layers.len() * 16 + 8).min(4095) as u32 + 1;
                let q = dev.create_query_set(&wgpu::QuerySetDescriptor { label: Some("dispatch-stamps"), ty: wgpu::QueryType::Timestamp, count: n });
                let resolve = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("dispatch-stamps"), size: 8 * n as u64, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
                let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("dispatch-stamps-read"), size: 8 * n as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
                (q, resolve, read, n)
            }),
            timer: (crate::gpu::hostprof_level() > 0 && dev.features().contains(wgpu::Features::TIMESTAMP_QUERY)).then(|| {
                let q = dev.create_query_set(&wgpu::QuerySetDescriptor { label: Some("token-timer"), ty: wgpu::QueryType::Timestamp, count: 2 });
                let resolve = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("token-timer"), size: 16, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
                let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("token-timer-read"), size: 16, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
                (q, resolve, read)
            }),
        }
    }

    /// A mirror for `seq` of the call's layers holding exactly `pos` rows, seeded from the
    /// host cache if needed.
    fn mirror_at(&self, mirrors: &mut HashMap<u64, Mirror>, at: &At) {
        let c = &at.model.cfg;
        let (kvd, cap) = (c.kv_dim(), at.host_kv.capacity());
        if mirrors.get(&at.seq).is_some_and(|mi| mi.k.len() != at.layers) {
            // Another layer count for this sequence (another model): start over from the host.
            mirrors.remove(&at.seq);
        }
        let mirror = mirrors.entry(at.seq).or_insert_with(|| Mirror {
            k: (0..at.layers).map(|_| self.storage_buf("kv-mirror-k", cap * kvd)).collect(),
            v: (0..at.layers).map(|_| self.storage_buf("kv-mirror-v", cap * kvd)).collect(),
            len: 0,
            recorded: None,
            prepared: None,
            prefill: None,
            ahead: None,
            best_staging: [0, 1].map(|_| self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("argmax-read"), size: 4, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false })),
            keys_staging: [0, 1].map(|_| key_staging(&self.ctx)),
        });
        if mirror.len != at.pos {
            mirror.ahead = None;
            // Seed from the host cache: a zero state is never assumed.
            let mut buf = vec![0f32; at.pos * kvd];
            for l in 0..at.layers {
                at.host_kv.keys(l, at.pos).convert_to_f32_slice(&mut buf);
                self.ctx.queue.write_buffer(&mirror.k[l], 0, bytemuck::cast_slice(&buf));
                at.host_kv.values(l, at.pos).convert_to_f32_slice(&mut buf);
                self.ctx.queue.write_buffer(&mirror.v[l], 0, bytemuck::cast_slice(&buf));
            }
            mirror.len = at.pos;
        }
    }

    /// Plan and bind one token's dispatches against the graph buffers and this mirror.
    /// Per layer 6 barrier-separated stages: QKV (RMSNorm on load), attention split (with the
    /// token's RoPE and mirror append, `rope_fold`; else a rope_store stage before it),
    /// combine, O projection (added to the residual), gate and up (RMSNorm on load), down
    /// (SiLU(gate) * up on load, added to the residual); on wide models (`separate_norm`)
    /// each RMSNorm is a stage of its own before QKV and gate/up (8 stages); with int8
    /// activations (`ModelGraph::int8`) every stage's int8 input written by the stage before
    /// it: O's by the combine (`combine_q8`), down's by gate/up (`glu_q8`), QKV's and
    /// gate/up's (x times the norm's weights, the scale applied by them) by the down and
    /// output projections (`norm_q8`; the first layer's by a quantizer), 6 stages a layer; a
    /// quantizer before each stage whose producer does not (up to 9); then the final norm
    /// (or its quantizer, or nothing where the last down projection wrote the head's input)
    /// and the head (the argmax or the top-k follow per call, `encode_recorded`).
    /// A stage's matrices run as one dispatch where
    /// `multi.rs` takes them (else a dispatch each). The whole model's token starts with its
    /// embedding row decoded on the device where it can be (`plan::embed`).
    fn record(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &ModelGraph, mirror: &Mirror) -> Result<Recorded, String> {
        if m.cfg.family == Family::Gemma3 {
            return self.record_gemma(m, args, map, g, mirror);
        }
        let norm_q8 = g.int8 && self.glu_q8 && self.norm_q8;
        match self.record_as(m, args, map, g, mirror, norm_q8) {
            Err(e) if norm_q8 => {
                let mut recorded = self.record_as(m, args, map, g, mirror, false)?;
                recorded.fallbacks.insert(0, format!("int8 activations without the deferred norm (a quantize dispatch before QKV and gate/up): {e}"));
                Ok(recorded)
            }
            recorded => recorded,
        }
    }

    /// `record`, with the normed stage inputs written by the output and down projections
    /// (`norm_q8`, an int8 graph's: a matrix the unit-writing kernel does not take fails it)
    /// or by quantize dispatches.
    fn record_as(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &ModelGraph, mirror: &Mirror, norm_q8: bool) -> Result<Recorded, String> {
        let c = &m.cfg;
        let ctx = &self.ctx;
        let res = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let mut params = Params::default();
        let mut p: Vec<Planned> = Vec::new();
        let (d, ff, qd) = (c.n_embd as u32, c.n_ff as u32, c.q_dim() as u32);
        let eps = c.eps;
        // Each normed stage either normalizes x in its matvecs' loads or, for wide models, in a
        // norm dispatch of its own into `xn` that plain matvecs then read: measured on the
        // H200 (bench/NOTES.md, eighth session), the in-loop norm costs 3-6 us per stage at
        // 576-2048 columns but ~14 at 4096, more than a dispatch and its barrier.
        let own_norm = separate_norm(d);
        let (qkv_label, ffn_label) = match (g.int8, own_norm) {
            (true, _) => ("qkv (int8 x)", "gate, up (int8 x)"),
            (false, true) => ("qkv", "gate, up"),
            (false, false) => ("qkv (norm fused)", "gate, up (norm fused)"),
        };
        fn normed<'b>(g: &'b ModelGraph, w: &'b wgpu::Buffer, y: &'b wgpu::Buffer, eps: f32, own_norm: bool) -> MatvecIo<'b> {
            match own_norm {
                true => MatvecIo::plain(&g.xn, y, 0),
                false => MatvecIo { x: &g.x, x2: Some(w), y, y_base: 0, variant: Variant { x: XMode::Norm, add: false }, eps },
            }
        }
        let norm_at = params.slot(bytemuck::bytes_of(&NormBlock { n: d, add: 0, eps: c.eps, row0: 0 }));
        let norm = |w| Planned { label: "norm", pipe: ctx.norm.clone(), bufs: vec![&g.x, &g.zero, w, &g.xn], uniform: Uniform::Slot(norm_at), grid: Grid::Fixed(1, 1, 1) };
        fn added<'b>(g: &'b ModelGraph, x: &'b wgpu::Buffer, x2: Option<&'b wgpu::Buffer>, mode: XMode) -> MatvecIo<'b> {
            MatvecIo { x, x2, y: &g.x, y_base: 0, variant: Variant { x: mode, add: true }, eps: 0.0 }
        }
        // Int8 activations (`g.int8`): each stage's input quantized by a dispatch of its own
        // (the RMSNorm or SiLU(gate) * up folded into it), then the int8-activation matvecs.
        let slot = |params: &mut Params, cols: u32, mode: u32| (quant_slot(params, cols, mode, eps), cols);
        let (q_norm, q_att, q_glu) = (slot(&mut params, d, QUANT_NORM), slot(&mut params, qd, QUANT_PLAIN), slot(&mut params, ff, QUANT_SILU));
        let quant = |x, x2, (at, cols)| quantize(ctx, x, x2, &g.xq, &g.xd, at, cols);
        fn int8_io<'b>(g: &'b ModelGraph, y: &'b wgpu::Buffer, add: bool) -> MatvecIo<'b> {
            MatvecIo { x: &g.xq, x2: Some(&g.xd), y, y_base: 0, variant: Variant { x: XMode::Int8, add }, eps: 0.0 }
        }
        // With `norm_q8` the normed inputs of QKV, gate/up and the head are x * the norm's
        // weights as int8 units with x's squares (`nq` / `nd`), written by the first layer's
        // quantizer and then by the output and down projections as they add into x; their
        // consumers apply the norm's scale (`XMode::Int8Norm`).
        let q_deferred = (quant_slot(&mut params, d, QUANT_NORM_DEFERRED, eps), d);
        let deferred_io = |y| MatvecIo { x: &g.nq, x2: Some(&g.nd), y, y_base: 0, variant: Variant { x: XMode::Int8Norm, add: false }, eps };
        fn residual_q8<'b>(g: &'b ModelGraph, xq: &'b wgpu::Buffer, xd: &'b wgpu::Buffer, norm: &'b wgpu::Buffer, eps: f32) -> Q8OutIo<'b> {
            Q8OutIo { xq, xd, oq: &g.nq, od: &g.nd, residual: Some((&g.x, norm)), eps }
        }
        let rope_threads = ((c.n_head + c.n_head_kv) * c.rope_dims / 2 + c.kv_dim()) as u32;
        // A stage left out for profiling (`CMF_GRAPH_SKIP`): its dispatches, from where it
        // began, are dropped again, and its weights not counted.
        let skip = &self.skip;
        let mut stage_bytes: BTreeMap<&'static str, u64> = BTreeMap::new();
        // Faster forms a layer could not take, and why (each reason once).
        let mut fallbacks: Vec<String> = Vec::new();
        let mut fell_back = |note: String| {
            if !fallbacks.contains(&note) {
                fallbacks.push(note);
            }
        };
        let mut stage = |p: &mut [Planned], at: usize, label: &'static str, ws: &[WeightArg], name: &str| {
            relabel(p, at, label);
            if skip.runs(name) {
                *stage_bytes.entry(label).or_default() += ws.iter().map(|w| w.view.bytes.len() as u64).sum::<u64>();
            }
        };
        let drop_if_skipped = |p: &mut Vec<Planned>, from: usize, stage: &str| {
            if !skip.runs(stage) {
                p.truncate(from);
            }
        };
        // The whole model's token starts by decoding its embedding row on the device where the
        // embedding is resident in one piece (the host then writes only the token, and a
        // greedy token can follow the previous one's argmax without it); else the host writes
        // the row.
        if g.layers == m.layers.len() {
            if let Some(e) = map.get(&m.weight_arg(&m.embed).key) {
                // An error (split into row chunks, no decoder for the codec) plans nothing: the
                // host looks the row up.
                let _ = plan::embed(ctx, e, &g.tok, &g.x, d, c.embed_scale, &mut params, &mut p);
            }
        }
        for (li, w) in args[..7 * g.layers].chunks_exact(7).enumerate() {
            let (attn_norm, ffn_norm) = &g.norms[li];
            // The norm after this layer: the next one's attention norm, or the output norm.
            let next_norm = g.norms.get(li + 1).map_or(&g.out_norm, |n| &n.0);
            let begun = p.len();
            if norm_q8 {
                if li == 0 {
                    p.push(quantize(ctx, &g.x, attn_norm, &g.nq, &g.nd, q_deferred.0, q_deferred.1));
                }
            } else if g.int8 {
                p.push(quant(&g.x, attn_norm, q_norm));
            } else if own_norm {
                p.push(norm(attn_norm));
            }
            let at = p.len();
            let io = |y| match (norm_q8, g.int8) {
                (true, _) => deferred_io(y),
                (false, true) => int8_io(g, y, false),
                (false, false) => normed(g, attn_norm, y, eps, own_norm),
            };
            let ws = [res(&w[0])?, res(&w[1])?, res(&w[2])?];
            // The attention split computing its own Q, K and V from the normed int8 row (its
            // stage is then "attn"); else the QKV matvecs and the plain split.
            let qkv_io = QkvAttnIo { n_head: c.n_head, n_head_kv: c.n_head_kv, head_dim: c.head_dim, xq: &g.nq, xd: &g.nd, kc: &mirror.k[li], vc: &mirror.v[li], part: &g.part, step: &g.step, eps };
            let fused = norm_q8
                && self.rope_fold
                && qkv_attn_wanted(self.qkv_attn, c.n_embd)
                && match qkv_attn::plan(ctx, ws, qkv_io, &mut params, &mut p) {
                    Ok(()) => true,
                    Err(e) => {
                        fell_back(format!("QKV as a dispatch before the attention split, not inside it: {e}"));
                        false
                    }
                };
            if fused {
                stage(&mut p, at, "qkv + attention split (int8 x, rope+kv append)", &w[0..3], "attn");
            } else {
                let ys = [&g.q, &g.k, &g.v];
                if !(self.multi && multi::matvecs(ctx, &ws, MultiIo::like(io(ys[0]), ys.to_vec()), d, &mut params, &mut p).is_ok()) {
                    for (w, y) in ws.into_iter().zip(ys) {
                        plan::matvec(ctx, w, io(y), d, 1, &mut params, &mut p)?;
                    }
                }
                stage(&mut p, at, qkv_label, &w[0..3], "qkv");
                if !self.rope_fold {
                    p.push(Planned { label: "rope+kv append", pipe: ctx.rope_store.clone(), bufs: vec![&g.q, &g.k, &g.v, &mirror.k[li], &mirror.v[li]], uniform: Uniform::Whole(&g.step), grid: Grid::Fixed(rope_threads.div_ceil(64), 1, 1) });
                }
            }
            drop_if_skipped(&mut p, begun, if fused { "attn" } else { "qkv" });
            let begun = p.len();
            if !fused {
                let split_label = if self.rope_fold { "attention split (rope+kv append)" } else { "attention split" };
                p.push(Planned { label: split_label, pipe: ctx.attn_split.clone(), bufs: vec![&g.q, &g.k, &g.v, &mirror.k[li], &mirror.v[li], &g.part], uniform: Uniform::Whole(&g.step), grid: Grid::HeadsByChunks(c.n_head as u32) });
            }
            // The int8 graph's O input: quantized by the combine itself where a head is whole units.
            let combined_q8 = g.int8 && self.combine_q8 && c.head_dim.is_multiple_of(32);
            p.push(match combined_q8 {
                true => Planned { label: "attention combine (int8 out)", pipe: ctx.attn_combine_q8.clone(), bufs: vec![&g.part, &g.xq, &g.xd], uniform: Uniform::Whole(&g.step), grid: Grid::Fixed(c.n_head as u32, 1, 1) },
                false => Planned { label: "attention combine", pipe: ctx.attn_combine.clone(), bufs: vec![&g.part, &g.att], uniform: Uniform::Whole(&g.step), grid: Grid::Fixed(c.n_head as u32, 1, 1) },
            });
            drop_if_skipped(&mut p, begun, "attn");
            let begun = p.len();
            if g.int8 && !combined_q8 {
                p.push(quant(&g.att, &g.att, q_att));
            }
            let at = p.len();
            if norm_q8 {
                q8_out::plan(ctx, Q8Out::Residual, &[res(&w[3])?], residual_q8(g, &g.xq, &g.xd, ffn_norm, eps), UnitSetting::from_env(Q8Out::Residual), &mut params, &mut p)?;
            } else {
                let io = if g.int8 { int8_io(g, &g.x, true) } else { added(g, &g.att, None, XMode::Plain) };
                plan::matvec(ctx, res(&w[3])?, io, qd, 1, &mut params, &mut p)?;
            }
            stage(&mut p, at, if norm_q8 { "o proj (+residual, int8 normed out)" } else { "o proj (+residual)" }, &w[3..4], "o");
            drop_if_skipped(&mut p, begun, "o");
            let begun = p.len();
            if g.int8 && !norm_q8 {
                p.push(quant(&g.x, ffn_norm, q_norm));
            } else if !g.int8 && own_norm {
                p.push(norm(ffn_norm));
            }
            let at = p.len();
            let io = |y| if g.int8 { int8_io(g, y, false) } else { normed(g, ffn_norm, y, eps, own_norm) };
            let ws = [res(&w[4])?, res(&w[5])?];
            let ys = [&g.g, &g.u];
            // The int8 graph's hidden state: written by gate and up as down's int8 input where
            // the kernel takes them, else quantized by a dispatch of its own after them.
            let (xq, xd) = if norm_q8 { (&g.nq, &g.nd) } else { (&g.xq, &g.xd) };
            let glu_io = Q8OutIo { xq, xd, oq: &g.hq, od: &g.hd, residual: None, eps };
            let hidden_q8 = g.int8
                && self.glu_q8
                && match q8_out::plan(ctx, Q8Out::Glu { normed: norm_q8 }, &ws, glu_io, UnitSetting::from_env(Q8Out::Glu { normed: norm_q8 }), &mut params, &mut p) {
                    Ok(()) => true,
                    Err(e) if norm_q8 => return Err(e),
                    Err(e) => {
                        fell_back(format!("down's int8 input quantized by a dispatch of its own, not by gate and up: {e}"));
                        false
                    }
                };
            if !(hidden_q8 || self.multi && multi::matvecs(ctx, &ws, MultiIo::like(io(ys[0]), ys.to_vec()), d, &mut params, &mut p).is_ok()) {
                for (w, y) in ws.into_iter().zip(ys) {
                    plan::matvec(ctx, w, io(y), d, 1, &mut params, &mut p)?;
                }
            }
            stage(&mut p, at, if hidden_q8 { "gate, up (int8 x, int8 out)" } else { ffn_label }, &w[4..6], "glu");
            drop_if_skipped(&mut p, begun, "glu");
            let begun = p.len();
            if g.int8 && !hidden_q8 {
                p.push(quant(&g.g, &g.u, q_glu));
            }
            let at = p.len();
            if norm_q8 {
                q8_out::plan(ctx, Q8Out::Residual, &[res(&w[6])?], residual_q8(g, &g.hq, &g.hd, next_norm, eps), UnitSetting::from_env(Q8Out::Residual), &mut params, &mut p)?;
            } else {
                let io = match (g.int8, hidden_q8) {
                    (true, true) => MatvecIo { x: &g.hq, x2: Some(&g.hd), y: &g.x, y_base: 0, variant: Variant { x: XMode::Int8, add: true }, eps: 0.0 },
                    (true, false) => int8_io(g, &g.x, true),
                    (false, _) => added(g, &g.g, Some(&g.u), XMode::Glu),
                };
                plan::matvec(ctx, res(&w[6])?, io, ff, 1, &mut params, &mut p)?;
            }
            stage(&mut p, at, if norm_q8 { "down (+residual, int8 normed out)" } else { "down (silu*up fused, +residual)" }, &w[6..7], "down");
            drop_if_skipped(&mut p, begun, "down");
        }
        if g.layers < m.layers.len() {
            // A device prefix: the residual stream after it is what comes back.
            return Ok(Recorded::bind(&ctx.device, p, &params, stage_bytes, fallbacks));
        }
        // The head reads every element of the normed state in each of its many workgroups:
        // one norm dispatch first (or the quantizer with the norm folded in) instead of a
        // norm per workgroup.
        let head = &args[args.len() - 1];
        let head_int8 = Q8_CODECS.contains(&planar_codec(head.view.codec));
        let io = if norm_q8 && head_int8 {
            // The last down projection wrote the output norm's input, unless the stage
            // ablation left it out (then the quantizer writes it from the residual stream).
            if !skip.runs("down") {
                p.push(quantize(ctx, &g.x, &g.out_norm, &g.nq, &g.nd, q_deferred.0, q_deferred.1));
            }
            deferred_io(&g.logits)
        } else if g.int8 && head_int8 {
            p.push(quant(&g.x, &g.out_norm, q_norm));
            int8_io(g, &g.logits, false)
        } else {
            let at = params.slot(bytemuck::bytes_of(&NormBlock { n: d, add: 0, eps: c.eps, row0: 0 }));
            p.push(Planned { label: "final norm", pipe: ctx.norm.clone(), bufs: vec![&g.x, &g.zero, &g.out_norm, &g.xn], uniform: Uniform::Slot(at), grid: Grid::Fixed(1, 1, 1) });
            MatvecIo::plain(&g.xn, &g.logits, 0)
        };
        let at = p.len();
        plan::matvec(ctx, res(head)?, io, d, 1, &mut params, &mut p)?;
        stage(&mut p, at, "head", &args[args.len() - 1..], "head");
        Ok(Recorded::bind(&ctx.device, p, &params, stage_bytes, fallbacks))
    }

    /// Run one token through the graph; `out` is written only on success.
    pub(super) fn run_graph(&self, job: &TokenGraphJob, out: GraphReadback) -> DeviceOutcome {
        let m = job.model;
        let kind = Readback::of(&out, m.cfg.vocab);
        let draw = out.device_draw();
        let capacity = job.host_kv.capacity();
        let at = At { model: m, seq: job.seq, pos: job.pos, host_kv: job.host_kv, layers: job.layers };
        self.on_graph(&at, 1, out, |g, mirror, map| {
            let recording = mirror.recorded.is_none();
            if recording {
                // The weight list is only needed to record a sequence's dispatches, not per token.
                let args: Vec<WeightArg> = graph_weights(m, g.layers).iter().map(|w| m.weight_arg(w)).collect();
                mirror.recorded = Some(self.record(m, &args, map, g, mirror)?);
                // The graph's kernel variants were just compiled: keep them for the next process.
                self.ctx.save_pipeline_cache();
            }
            let t0 = std::time::Instant::now();
            let rec = mirror.recorded.as_ref().expect("recorded above");
            // The next token goes ahead where the device picks it (greedy: the argmax; sampled:
            // drawn from the candidates by the sampler's spec): it is queued before this one is
            // read back, its token copied on the device from this one's pick, so the device
            // never waits for the host between tokens (not under the profiling timers, whose
            // buffers serve one token at a time).
            let go_ahead = kind.picks_on_device() && rec.device_embed && g.timer.is_none() && g.stamps.is_none() && job.pos + 1 < capacity;
            let (queued, dropped) = match mirror.ahead.take() {
                Some(a) if a.pos == job.pos && a.token == Some(job.token) && a.kind == kind => (Some(a.submission), false),
                Some(a) => (None, a.pos == job.pos),
                None => (None, false),
            };
            // The draw of the token whose candidates a submission picks: this token's first,
            // the one queued behind it second.
            let set_draw = |which: usize| {
                if let (Readback::TopK(_, true), Some(spec)) = (kind, &draw) {
                    g.top.set_draw(&self.ctx, spec, spec.draws[which]);
                }
            };
            let taken = queued.is_some();
            let submission = match queued {
                Some(s) => s,
                None => {
                    self.write_token(m, g, rec, job.token);
                    set_draw(0);
                    let cmd = match mirror.prepared.take() {
                        Some((pos, k, cmd)) if pos == job.pos && k == kind => cmd,
                        _ => self.encode_token(rec, g, job.pos, kind, mirror.io(job.pos, false)),
                    };
                    self.ctx.queue.submit([cmd])
                }
            };
            let t1 = std::time::Instant::now();
            let next = job.pos + 1;
            if go_ahead {
                set_draw(1);
                let cmd = self.encode_token(rec, g, next, kind, mirror.io(next, true));
                mirror.ahead = Some(Ahead { pos: next, kind, submission: self.ctx.queue.submit([cmd]), token: None });
            } else if next < capacity {
                // While the GPU runs this token, encode the next one.
                mirror.prepared = Some((next, kind, self.encode_token(rec, g, next, kind, mirror.io(next, false))));
            }
            let (back, pick) = self.read_result(g, kind, mirror.io(job.pos, false), Some(submission))?;
            if let (Some(a), Some(t)) = (mirror.ahead.as_mut(), pick) {
                a.token = Some(t);
            }
            let mut prof = self.profile.lock().unwrap_or_else(|e| e.into_inner());
            prof.tokens += 1;
            prof.tokens_ahead += u64::from(taken);
            prof.ahead_dropped += u64::from(dropped);
            prof.host += t1 - t0;
            prof.tail += t1.elapsed();
            if let Some((_, _, read)) = &g.timer {
                let t = self.ctx.read_back::<u64>(read, 2)?;
                let ns = t[1].saturating_sub(t[0]) as f64 * self.ctx.queue.get_timestamp_period() as f64;
                *prof.gpu_pass.get_or_insert_default() += std::time::Duration::from_nanos(ns as u64);
            }
            self.add_dispatch_times(g, rec, &mut prof.kernels)?;
            if recording || g.stamps.is_some() {
                prof.stage_bytes.clone_from(&rec.stage_bytes);
                prof.graph_notes.clone_from(&rec.fallbacks);
            }
            Ok(back)
        })
    }

    /// The host's part of a token it supplies: the token (where the graph decodes its
    /// embedding row) or the row itself into x (the step block comes from `steps`).
    fn write_token(&self, m: &Llama, g: &ModelGraph, rec: &Recorded, token: u32) {
        if rec.device_embed {
            self.ctx.queue.write_buffer(&g.tok, 0, bytemuck::bytes_of(&token));
        } else {
            let mut x = vec![0f32; m.cfg.n_embd];
            m.embed_rows(&[token], &mut x);
            self.ctx.queue.write_buffer(&g.x, 0, bytemuck::cast_slice(&x));
        }
    }

    /// What `kind` names, from the staging buffers the graph's command buffer copied it into
    /// (the argmax or the top-k keys from `io`'s, waiting only for submission `after` where
    /// given), and the device's pick of the next token where it made one (the argmax, or the
    /// token drawn from the candidates).
    pub(super) fn read_result(&self, g: &ModelGraph, kind: Readback, io: TokenIo, after: Option<wgpu::SubmissionIndex>) -> Result<(GraphRead, Option<u32>), String> {
        let pick = || self.ctx.read_back_after::<u32>(io.best_to, 1, after.clone()).map(|b| b[0]);
        Ok(match kind {
            Readback::Logits(vocab) => (GraphRead::Logits(self.ctx.read_back::<f32>(&g.staging, vocab as u64)?), None),
            Readback::Argmax => {
                let t = pick()?;
                (GraphRead::Argmax(t), Some(t))
            }
            Readback::TopK(k, draw) => (GraphRead::TopK(read_candidates(&self.ctx, io.keys_to, k, after.clone())?), if draw { Some(pick()?) } else { None }),
            Readback::Hidden(n) => (GraphRead::Hidden(self.ctx.read_back::<f32>(&g.hidden_staging, n as u64)?), None),
        })
    }

    /// The frame of every graph call: the model's buffers (built, and the weights of the
    /// call's layers made resident, when the model, the context size or the layer count
    /// changes), the sequence's mirror of those layers holding exactly `at.pos` rows, then
    /// `body` (which submits the work and reads its result back)
    /// under device error scopes; on success `out` is filled and the mirror is `rows` longer,
    /// on any error the sequence's mirror is dropped. A call whose readback does not fit its
    /// layers (the whole model: logits or argmax; a prefix: `rows` residual rows) declines.
    pub(super) fn on_graph(&self, at: &At, rows: usize, out: GraphReadback, body: impl FnOnce(&mut ModelGraph, &mut Mirror, &HashMap<u64, Resident>) -> Result<GraphRead, String>) -> DeviceOutcome {
        let m = at.model;
        let full = m.layers.len();
        let hidden = match &out {
            GraphReadback::Hidden(h) => Some(h.len()),
            _ => None,
        };
        if at.layers == 0 || at.layers > full || (at.layers < full) != hidden.is_some() || hidden.is_some_and(|n| n != rows * m.cfg.n_embd) {
            return DeviceOutcome::Declined("graph: the layers asked for do not match the readback");
        }
        let capacity = at.host_kv.capacity();
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let mut graph = self.graph.lock().unwrap_or_else(|e| e.into_inner());
        let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        let key = model_key(m);
        let mut cold = false;
        if graph.as_ref().is_none_or(|g| g.model_key != key || g.capacity < capacity || g.layers != at.layers) {
            // Whether the model fits the kernels depends only on the model and the context
            // size: checked when they change, not per call.
            if let Some(why) = unsupported(m, capacity) {
                return DeviceOutcome::Declined(why);
            }
            // Every weight resident and proven by its fingerprint, once per graph build.
            let args: Vec<WeightArg> = graph_weights(m, at.layers).iter().map(|w| m.weight_arg(w)).collect();
            let refs: Vec<&WeightArg> = args.iter().collect();
            let mut fitted = self.ensure(&mut map, &refs);
            if matches!(fitted, Err(Unfit::Budget)) {
                // Weights the per-op path made resident (a prompt run per op, say) give way
                // to the graph's, which `graph_layers` sized to the whole budget.
                self.evict_all_but(&mut map, &refs);
                fitted = self.ensure(&mut map, &refs);
            }
            if let Err(u) = fitted {
                return DeviceOutcome::Declined(u.why(true));
            }
            if at.layers == full && planar_supports(m.embed.codec, m.embed.cols) {
                // The token graph decodes the embedding row on the device where the embedding
                // fits beside the graph's weights (often it is the head, already resident);
                // where it does not, the host looks the row up.
                let e = m.weight_arg(&m.embed);
                let _ = self.ensure(&mut map, &[&e]);
            }
            // Recorded dispatches point at the old buffers: drop them with the buffers.
            mirrors.values_mut().for_each(|mi| {
                mi.recorded = None;
                mi.prepared = None;
                mi.prefill = None;
                mi.ahead = None;
            });
            *graph = Some(self.build_graph(m, capacity, key, at.layers));
            // New buffers (and maybe uploads): this call is not steady state.
            cold = true;
        }
        let g = graph.as_mut().expect("built above");
        let dev = &self.ctx.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        self.mirror_at(&mut mirrors, at);
        let mirror = mirrors.get_mut(&at.seq).expect("mirror_at made it");
        let result = body(g, mirror, &map);
        let oom = pollster::block_on(oom.pop());
        let invalid = pollster::block_on(scope.pop());
        let result = match invalid.or(oom) {
            Some(e) => Err(format!("wgpu: {e}")),
            None => result,
        };
        match result {
            Ok(back) => {
                out.fill(back);
                if let Some(mi) = mirrors.get_mut(&at.seq) {
                    mi.len = at.pos + rows;
                }
                DeviceOutcome::Completed { cold }
            }
            Err(e) => {
                mirrors.remove(&at.seq);
                DeviceOutcome::Failed(e)
            }
        }
    }

    /// One token's command buffer at position `pos`: the recorded dispatches in one compute
    /// pass (the attention grid sized for `pos`), then what `kind` names copied for readback.
    fn encode_token(&self, rec: &Recorded, g: &ModelGraph, pos: usize, kind: Readback, io: TokenIo) -> wgpu::CommandBuffer {
        self.encode_recorded("token", rec, g, Some(pos), kind, &g.x, true, io, None)
    }

    /// A recorded dispatch list in one compute pass (a decode token's at `pos`: its step block
    /// copied into place first and the attention grid sized for it; a prefill chunk's without),
    /// with the per-dispatch timestamps under `CMF_GRAPH_HOSTPROF=2`
    /// (and, with `pass_timer`, the pass's own under `=1`), then what `kind` names copied
    /// for readback (a prefix's residual stream from `hidden`); `guard`: the f16 guard's word,
    /// cleared before the pass and copied after it into the second buffer.
    #[allow(clippy::too_many_arguments)]
    fn encode_recorded(&self, label: &str, rec: &Recorded, g: &ModelGraph, pos: Option<usize>, kind: Readback, hidden: &wgpu::Buffer, pass_timer: bool, io: TokenIo, guard: Option<(&wgpu::Buffer, &wgpu::Buffer)>) -> wgpu::CommandBuffer {
        let mut enc = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        if let Some((word, _)) = guard {
            enc.clear_buffer(word, 0, None);
        }
        let block = std::mem::size_of::<StepBlock>() as u64;
        if let Some(pos) = pos {
            enc.copy_buffer_to_buffer(&g.steps, pos as u64 * block, &g.step, 0, block);
            gemma::copy_local_step(g, &mut enc, pos);
        }
        let chunks = pos.map_or(0, |p| (p + 1).div_ceil(ATT_CHUNK) as u32);
        if io.from_device {
            enc.copy_buffer_to_buffer(&g.best, 0, &g.tok, 0, 4);
        }
        let timer = g.timer.as_ref().filter(|_| pass_timer);
        let stamps = g.stamps.as_ref().filter(|s| rec.dispatches.len() < s.3 as usize);
        {
            let timestamp_writes = timer.map(|(q, _, _)| wgpu::ComputePassTimestampWrites { query_set: q, beginning_of_pass_write_index: Some(0), end_of_pass_write_index: Some(1) });
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes });
            plan::encode(&mut pass, rec.dispatches.iter().map(|(p, b, gr)| (p, b, *gr)), chunks, stamps.map(|s| &s.0));
            // After the head, what the readback needs: the greedy pick or the sampler's candidates.
            match kind {
                Readback::Argmax => g.argmax.encode(&self.ctx, &mut pass),
                Readback::TopK(k, draw) => g.top.encode(&self.ctx, &mut pass, k, draw),
                Readback::Logits(_) | Readback::Hidden(_) => {}
            }
        }
        if let Some((q, resolve, read, _)) = stamps {
            let used = rec.dispatches.len() as u32 + 1;
            enc.resolve_query_set(q, 0..used, resolve, 0);
            enc.copy_buffer_to_buffer(resolve, 0, read, 0, 8 * used as u64);
        }
        match kind {
            Readback::Logits(vocab) => enc.copy_buffer_to_buffer(&g.logits, 0, &g.staging, 0, (vocab * 4) as u64),
            Readback::Argmax => enc.copy_buffer_to_buffer(&g.best, 0, io.best_to, 0, 4),
            Readback::TopK(k, draw) => {
                g.top.copy_out(&mut enc, k, io.keys_to);
                if draw {
                    enc.copy_buffer_to_buffer(&g.best, 0, io.best_to, 0, 4);
                }
            }
            Readback::Hidden(n) => enc.copy_buffer_to_buffer(hidden, 0, &g.hidden_staging, 0, (n * 4) as u64),
        }
        if let Some((q, resolve, read)) = timer {
            enc.resolve_query_set(q, 0..2, resolve, 0);
            enc.copy_buffer_to_buffer(resolve, 0, read, 0, 16);
        }
        if let Some((word, read)) = guard {
            enc.copy_buffer_to_buffer(word, 0, read, 0, 4);
        }
        enc.finish()
    }

    /// After a recorded list ran with per-dispatch timestamps (`CMF_GRAPH_HOSTPROF=2`): its
    /// GPU time added to `into` by the dispatches' labels. Nothing where none were written.
    fn add_dispatch_times(&self, g: &ModelGraph, rec: &Recorded, into: &mut BTreeMap<&'static str, std::time::Duration>) -> Result<(), String> {
        let Some((_, _, read, _)) = g.stamps.as_ref().filter(|s| rec.dispatches.len() < s.3 as usize) else {
            return Ok(());
        };
        let t = self.ctx.read_back::<u64>(read, rec.dispatches.len() as u64 + 1)?;
        let period = self.ctx.queue.get_timestamp_period() as f64;
        for (label, w) in rec.labels.iter().zip(t.windows(2)) {
            *into.entry(label).or_default() += std::time::Duration::from_nanos((w[1].saturating_sub(w[0]) as f64 * period) as u64);
        }
        Ok(())
    }

    /// Attention alone, for the parity harness: `rows` query rows (rows, n_head * head_dim,
    /// after RoPE) at positions `k.len() / kv_dim - rows ..`, each over the `k` / `v` rows
    /// (positions, n_head_kv * head_dim) up to its own, through the kernels the graphs run:
    /// one row is a decode token (split + combine), more a prompt chunk (on the matrix units
    /// where the device has them, run again on `attn_rows` where q trips the f16 guard, else
    /// `attn_rows`). The output (rows, n_head * head_dim) is poisoned with NaN before they run.
    #[allow(clippy::too_many_arguments)]
    pub fn attention(&self, q: &[f32], k: &[f32], v: &[f32], rows: usize, n_head: usize, n_head_kv: usize, head_dim: usize, scale: f32) -> Result<Vec<f32>, String> {
        self.run_attention(q, k, v, rows, (n_head, n_head_kv, head_dim), scale, None).map(|r| r.out)
    }

    /// A decode token's attention with its RoPE, for the parity harness, as the token graph
    /// runs it: q (n_head * head_dim) and the last rows of `k` / `v` (the token's own, at
    /// position `k.len() / kv_dim - 1`) unrotated, the rows before it the mirror's. With
    /// `rope.fold` the split rotates and appends (`CMF_WGPU_ROPE_FOLD`), else rope_store runs
    /// first. Returns the output and the mirror's K and V rows at the token's position (the
    /// mirror's copy of that row is NaN before the kernels run).
    #[allow(clippy::too_many_arguments)]
    pub fn decode_attention_with_rope(&self, q: &[f32], k: &[f32], v: &[f32], n_head: usize, n_head_kv: usize, head_dim: usize, scale: f32, rope: RopeSpec) -> Result<RopedAttention, String> {
        self.run_attention(q, k, v, 1, (n_head, n_head_kv, head_dim), scale, Some(rope))
    }

    /// `attention` and `decode_attention_with_rope`: the output and, with `rope`, the mirror's
    /// K and V rows at the last position (empty without).
    #[allow(clippy::too_many_arguments)]
    fn run_attention(&self, q: &[f32], k: &[f32], v: &[f32], rows: usize, (n_head, n_head_kv, head_dim): (usize, usize, usize), scale: f32, rope: Option<RopeSpec>) -> Result<RopedAttention, String> {
        let kvd = n_head_kv * head_dim;
        let n = k.len().checked_div(kvd).unwrap_or(0);
        if rows == 0 || n < rows || n_head == 0 || !head_dim.is_multiple_of(4) || head_dim > MAX_HEAD_DIM || !n_head.is_multiple_of(n_head_kv) || q.len() != rows * n_head * head_dim || k.len() != n * kvd || v.len() != k.len() {
            return Err("attention shapes outside the kernels' range".into());
        }
        if rope.is_some_and(|r| rows != 1 || r.rot > head_dim || !r.rot.is_multiple_of(2)) {
            return Err("RoPE in attention is for one decode row, over an even rotary width within the head".into());
        }
        let pos = n - rows;
        let chunks = n.div_ceil(ATT_CHUNK) as u32;
        let r = rope.unwrap_or(RopeSpec { rot: 0, neox: false, base: 0.0, fold: false });
        let step = StepBlock { pos: pos as u32, n_head: n_head as u32, n_head_kv: n_head_kv as u32, head_dim: head_dim as u32, rot: r.rot as u32, neox: u32::from(r.neox), chunks, fold: u32::from(r.fold), base: r.base, scale, rows: rows as u32, window: 0, eps: 0.0, pad: [0; 3] };
        let dev = &self.ctx.device;
        // A prompt chunk's attention on the matrix units (where `units` and the device allow)
        // and whether its f16 guard tripped, which reruns it on attn_rows as the graph does.
        let run = |units: bool| -> Result<(Vec<f32>, bool), String> {
            self.ctx.validated("wgpu attention", || {
                let init = |label, data: &[f32]| dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytemuck::cast_slice(data), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
                // With RoPE the token's rows arrive apart and the mirror's copy of its row is poison.
                let mirror = |rows: &[f32]| match rope {
                    Some(_) => [&rows[..pos * kvd], &vec![f32::NAN; kvd][..]].concat(),
                    None => rows.to_vec(),
                };
                let (kc, vc) = (init("k-mirror", &mirror(k)), init("v-mirror", &mirror(v)));
                let (qb, k_new, v_new) = (init("q", q), init("k-new", &k[pos * kvd..]), init("v-new", &v[pos * kvd..]));
                let part = self.storage_buf("part", n_head * chunks as usize * (head_dim + 2));
                let att = init("att", &vec![f32::NAN; q.len()]);
                let bad = init("f16-guard", &[0.0]);
                let stepb = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("step"), contents: bytemuck::bytes_of(&step), usage: wgpu::BufferUsages::UNIFORM });
                let rope_threads = ((n_head + n_head_kv) * r.rot / 2 + kvd) as u32;
                let mut plan = Vec::new();
                if rope.is_some_and(|r| !r.fold) {
                    plan.push(Planned { label: "rope+kv append", pipe: self.ctx.rope_store.clone(), bufs: vec![&qb, &k_new, &v_new, &kc, &vc], uniform: Uniform::Whole(&stepb), grid: Grid::Fixed(rope_threads.div_ceil(64), 1, 1) });
                }
                match rows {
                    1 => plan.extend([
                        Planned { label: "attention split", pipe: self.ctx.attn_split.clone(), bufs: vec![&qb, &k_new, &v_new, &kc, &vc, &part], uniform: Uniform::Whole(&stepb), grid: Grid::HeadsByChunks(n_head as u32) },
                        Planned { label: "attention combine", pipe: self.ctx.attn_combine.clone(), bufs: vec![&part, &att], uniform: Uniform::Whole(&stepb), grid: Grid::Fixed(n_head as u32, 1, 1) },
                    ]),
                    _ => {
                        let a = self.ctx.prompt_attention(head_dim, units);
                        let mut bufs = vec![&qb, &kc, &vc, &att];
                        if a.guarded {
                            bufs.push(&bad);
                        }
                        plan.push(Planned { label: "attention", pipe: a.pipe, bufs, uniform: Uniform::Whole(&stepb), grid: Grid::Fixed(n_head as u32, (rows as u32).div_ceil(a.rows), 1) });
                    }
                }
                let groups = plan::bind(dev, &plan, &stepb);
                let row_bytes = if rope.is_some() { (kvd * 4) as u64 } else { 0 };
                // The output, the K and V rows (with RoPE), then the guard's word.
                let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("att-read"), size: att.size() + 2 * row_bytes + 4, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
                let copy = |enc: &mut wgpu::CommandEncoder| {
                    enc.copy_buffer_to_buffer(&att, 0, &read, 0, att.size());
                    if row_bytes > 0 {
                        enc.copy_buffer_to_buffer(&kc, pos as u64 * row_bytes, &read, att.size(), row_bytes);
                        enc.copy_buffer_to_buffer(&vc, pos as u64 * row_bytes, &read, att.size() + row_bytes, row_bytes);
                    }
                    enc.copy_buffer_to_buffer(&bad, 0, &read, att.size() + 2 * row_bytes, 4);
                };
                self.ctx.submit_pass("attention", |pass| plan::encode(pass, plan.iter().zip(&groups).map(|(p, g)| (&p.pipe, g, p.grid)), chunks, None), copy);
                let mut back = self.ctx.read_back::<f32>(&read, read.size() / 4)?;
                let tripped = back.pop().is_some_and(|word| word.to_bits() != 0);
                Ok((back, tripped))
            })
        };
        let mut out = match run(true)? {
            (_, true) => run(false)?.0,
            (out, false) => out,
        };
        let rows_back = out.split_off(q.len());
        let (k_row, v_row) = rows_back.split_at(rows_back.len() / 2);
        Ok(RopedAttention { out, k_row: k_row.to_vec(), v_row: v_row.to_vec() })
    }

    /// Test hook: one activation row (a multiple of 32 long) through the token graph's
    /// quantizer (quant.wgsl; mode 0: x, 1: silu(x) * x2, 2: RMSNorm of x with the weights x2
    /// and `eps`, 3: x * x2 with the unit's squares of x in the fourth lane): per 32 values
    /// the int8 values and (d, d * sum, sum, 0 or the squares). The outputs are poisoned
    /// (0x7F bytes, NaN scales) before it runs.
    pub fn quantize(&self, x: &[f32], x2: &[f32], mode: u32, eps: f32) -> Result<Int8Units, String> {
        let cols = x.len();
        if cols == 0 || !cols.is_multiple_of(32) || x2.len() != cols || mode > 3 {
            return Err("quantizer input outside its range".into());
        }
        let (xb, x2b) = (self.const_buf("x", x), self.const_buf("x2", x2));
        let (xq, xd) = self.poisoned_units(cols);
        let mut params = Params::default();
        let at = params.slot(bytemuck::bytes_of(&QuantBlock { cols: cols as u32, mode, eps, pad: 0 }));
        let plan = [quantize(&self.ctx, &xb, &x2b, &xq, &xd, at, cols as u32)];
        self.run_into_units("wgpu quantize", &plan, &params, (&xq, &xd), cols)
    }

    /// A test hook's outputs for `cols` values as int8 units: the values (poisoned with 0x7F
    /// bytes) and per unit (d, d * sum, sum, 0) (NaN).
    pub(super) fn poisoned_units(&self, cols: usize) -> (wgpu::Buffer, wgpu::Buffer) {
        let poisoned = |label, words: Vec<u32>| self.ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytemuck::cast_slice(&words), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
        (poisoned("xq", vec![0x7F7F_7F7F; cols / 4]), poisoned("xd", vec![f32::NAN.to_bits(); cols / 8]))
    }

    /// A test hook's storage buffer of `n` floats read back (waits for the queue).
    pub(super) fn read_floats(&self, buf: &wgpu::Buffer, n: usize) -> Result<Vec<f32>, String> {
        let read = self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("floats-read"), size: (n * 4) as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let mut enc = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("floats-read") });
        enc.copy_buffer_to_buffer(buf, 0, &read, 0, (n * 4) as u64);
        self.ctx.queue.submit([enc.finish()]);
        self.ctx.read_back::<f32>(&read, n as u64)
    }

    /// A test hook's one-off `plan` run (its uniform slots in `params`), then its int8 units
    /// (`poisoned_units`' buffers) read back: the values and per unit (d, d * sum, sum, 0).
    pub(super) fn run_into_units(&self, label: &str, plan: &[Planned], params: &Params, (xq, xd): (&wgpu::Buffer, &wgpu::Buffer), cols: usize) -> Result<Int8Units, String> {
        let dev = &self.ctx.device;
        let words = self.ctx.validated(label, || {
            let pbuf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("units-params"), contents: &params.0, usage: wgpu::BufferUsages::UNIFORM });
            let groups = plan::bind(dev, plan, &pbuf);
            let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("units-read"), size: (cols + cols / 2) as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
            let copy = |enc: &mut wgpu::CommandEncoder| {
                enc.copy_buffer_to_buffer(xq, 0, &read, 0, cols as u64);
                enc.copy_buffer_to_buffer(xd, 0, &read, cols as u64, (cols / 2) as u64);
            };
            self.ctx.submit_pass(label, |pass| plan::encode(pass, plan.iter().zip(&groups).map(|(p, g)| (&p.pipe, g, p.grid)), 0, None), copy);
            self.ctx.read_back::<u32>(&read, (cols + cols / 2) as u64 / 4)
        })?;
        let (q, d) = words.split_at(cols / 4);
        let values = q.iter().flat_map(|w| w.to_le_bytes().map(|b| b as i8)).collect();
        let scales = d.chunks_exact(4).map(|s| [0, 1, 2, 3].map(|i| f32::from_bits(s[i]))).collect();
        Ok((values, scales))
    }

    /// Mirror rows from..to of `seq` into the host cache layout.
    pub(super) fn pull_rows(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        let mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        let mirror = mirrors.get(&seq).ok_or("no KV mirror for this sequence")?;
        if to > mirror.len || from > to {
            return Err(format!("the mirror holds {} rows, {from}..{to} were asked for", mirror.len));
        }
        let d = host.kv_dim();
        let bytes = ((to - from) * d * 4) as u64;
        if bytes == 0 {
            host.set_len(to);
            return Ok(());
        }
        let dev = &self.ctx.device;
        let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("kv-read"), size: 2 * bytes, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        // A device prefix mirrors its leading layers only; the host wrote the others itself.
        for l in 0..mirror.k.len() {
            let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("kv-pull") });
            let at = (from * d * 4) as u64;
            enc.copy_buffer_to_buffer(&mirror.k[l], at, &read, 0, bytes);
            enc.copy_buffer_to_buffer(&mirror.v[l], at, &read, bytes, bytes);
            self.ctx.queue.submit([enc.finish()]);
            let kv = self.ctx.read_back::<f32>(&read, 2 * bytes / 4)?;
            let (k, v) = kv.split_at(kv.len() / 2);
            host.write(l, from, k, v);
        }
        host.set_len(to);
        Ok(())
    }
}
