//! The whole-token decode graph on CUDA (SPEC section 8): embedding lookup, every layer
//! (norm, QKV, RoPE, KV-mirror append, attention over the mirror, output projection,
//! residual, FFN, residual), final norm and head queued on one stream with no host round
//! trip; one readback of the logits, their argmax, or the sampler's top-k candidates
//! (`top_k.rs`). Token and position travel through
//! device memory, so the launch sequence is the same for every token (captured once per
//! sequence). Six launches per layer: QKV with the RMSNorm (computed while the kernel stages
//! its input), RoPE and the KV-mirror append fused; attention split by positions; the merge
//! of its partials; the output projection adding into the residual stream; gate/up with the
//! norm and SiLU fused; the down projection adding into the stream. Attention's output (by
//! the merge, or by the split where the context is one chunk) and gate/up's are also written
//! as the output and down projections' input already quantized to int8 (`chain.rs`).
//!
//! The batched prefill graph (SPEC section 9) is the same layer for a chunk of prompt rows:
//! the projections and the FFN run as cuBLAS f16 GEMMs over weights decoded to f16 per chunk
//! (`blas.rs`), or without cuBLAS as int8 tensor-core GEMMs over 64-row tiles (mma.cu; the
//! row kernels' tiles of up to 8 rows where the codec or the chunk does not allow), attention
//! takes 64 query rows per block over the mirror on the tensor cores (flash.cu; 32 rows in
//! FP32 for other head sizes), and only the last row goes through the head.
//!
//! Gemma 3's decode token keeps this frame around its own layer (`gemma.rs`); its prompt
//! chunks take cuBLAS's GEMMs only (without cuBLAS, or where the f16 guard trips, they run
//! per op).

mod gemma;

use super::chain::image_bytes;
use super::cluster::{self, ClusterLayer, ClusterPlan, CLUSTER_BLOCKS};
use super::launch::{active_clusters, launch, launch_in_clusters, KernelArgs};
use super::top_k::{read_candidates, NextPick, PickTo, TopKBuffers, TOPK_MAX};
use super::{act_code, err, kind, row_smem, CudaBackend, MatvecHow, Resident};
use crate::gpu::backend::{Activation, DeviceOutcome, GraphProfile, GraphRead, GraphReadback, PrefillGraphJob, TokenGraphJob, WeightArg};
use crate::gpu::memory::model_key;
use crate::kv::KvCache;
use crate::model::llama::{Family, Llama, LlamaConfig, Weight};
use crate::sample::DrawSpec;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUresult, CUstreamCaptureMode};
use cudarc::driver::{CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaView, DevicePtr, LaunchConfig};
use std::collections::HashMap;

/// Positions per split-attention block (`ATT_CHUNK` in graph.cu).
pub(super) const ATT_CHUNK: usize = 64;
/// Largest head size the attention kernels handle.
const MAX_HEAD_DIM: usize = 256;
/// Captures a token tries before its launches run uncaptured. Other work on the device can
/// invalidate a stream's capture whatever its mode: on the H200, other threads bringing
/// backends up and dropping them (kernel modules loaded and unloaded) in the same context
/// did, 4 captures of 300 (bench/results/h200-s25/call4); the next attempt usually finds the
/// device quiet.
const CAPTURE_ATTEMPTS: usize = 3;

/// The split attention kernels (`attention_h{HD}` in graph.cu): each takes head sizes up to
/// its HD (its per-thread K and V registers are sized for HD).
pub(super) const ATTENTION_SPLIT: [(usize, &str); 3] = [(64, "attention_h64"), (128, "attention_h128"), (256, "attention_h256")];
/// The same kernels for sliding-window layers (`attention_window_h{HD}`: they take the
/// window, the others compile it out).
pub(super) const ATTENTION_WINDOW_SPLIT: [(usize, &str); 3] = [(64, "attention_window_h64"), (128, "attention_window_h128"), (256, "attention_window_h256")];

/// The prompt chunk's tensor-core attention kernels (`flash_rows_h{HD}` in flash.cu), per
/// head size they take exactly, with their block's threads (128 a 64-row tile; 256 at head
/// size 256, two warps a 16-row group); other head sizes take `attention_rows_d*` or the
/// split kernel.
pub(super) const FLASH_ROWS: [(usize, &str, u32); 3] = [(64, "flash_rows_h64", 128), (128, "flash_rows_h128", 128), (256, "flash_rows_h256", 256)];

/// The same kernels for sliding-window layers (`flash_window_h{HD}`: they take the window,
/// the others compile it out).
pub(super) const FLASH_WINDOW: [(usize, &str, u32); 3] = [(64, "flash_window_h64", 128), (128, "flash_window_h128", 128), (256, "flash_window_h256", 256)];

/// Most pieces the tensor-core prompt attention splits a row's keys into (the prefill
/// partials' slots a row and head), and the fewest keys a piece takes.
pub(super) const FLASH_PIECES: usize = 8;
const FLASH_PIECE_MIN: usize = 128;

/// Keys a tensor-core prompt-attention block takes for a chunk whose `tiles` 64-row tiles of
/// `n_head` heads see up to `keys` keys, on `sms` SMs, with `slots` partials a row and head:
/// 0 (a tile's whole context) where the tiles fill at least half the SMs or the keys fit one
/// piece, else the keys in at most `slots` pieces of at least FLASH_PIECE_MIN (a multiple of
/// the kernel's 32-key chunks), merged by `attention_merge`.
fn flash_span(n_head: usize, tiles: usize, keys: usize, sms: usize, slots: usize) -> usize {
    if n_head * tiles * 2 >= sms || slots < 2 {
        return 0;
    }
    let span = keys.div_ceil(slots).next_multiple_of(32).max(FLASH_PIECE_MIN);
    if span >= keys { 0 } else { span }
}

/// The split attention kernel for `head_dim` (<= MAX_HEAD_DIM), a sliding-window layer's
/// where `windowed`: the smallest that holds it.
pub(super) fn attention_split_kernel(head_dim: usize, windowed: bool) -> &'static str {
    let kernels = if windowed { &ATTENTION_WINDOW_SPLIT } else { &ATTENTION_SPLIT };
    kernels.iter().find(|(hd, _)| head_dim <= *hd).map_or(kernels[2].1, |(_, name)| name)
}

/// Head sizes the prompt-chunk attention kernel (`attention_rows_d{head_dim / 32}` in
/// graph.cu) is built for; other sizes run the per-row split kernel.
pub(super) const ATTENTION_ROWS_DIMS: [usize; 3] = [64, 128, 256];

/// Floats a q-tile or K-chunk row of the prompt-chunk attention kernel is padded by (handed
/// to the kernel as `ATT_ROWS_PAD`).
pub(super) const ATT_ROWS_PAD: usize = 4;

/// Threads a block of the prompt-chunk attention kernel (its 32-row tile over 8 warps of 4
/// rows; handed to the kernel as `ATT_ROWS_THREADS`).
pub(super) const ATT_ROWS_THREADS: usize = 256;

/// Dynamic shared memory of the prompt-chunk attention kernel: the q tile and a K chunk of 32
/// rows at head_dim + ATT_ROWS_PAD floats, a V chunk of 32 rows at head_dim.
pub(super) fn attention_rows_smem(head_dim: usize) -> usize {
    4 * 32 * (2 * (head_dim + ATT_ROWS_PAD) + head_dim)
}

/// Device buffers of one model's graph: norms and per-token scratch.
pub(super) struct ModelGraph {
    /// Identifies the model the buffers were built for (its mapped file).
    model_key: u64,
    /// Per layer: (attn_norm, ffn_norm), (n_embd) each.
    norms: Vec<(CudaSlice<f32>, CudaSlice<f32>)>,
    out_norm: CudaSlice<f32>,
    x: CudaSlice<f32>,      // (n_embd) residual stream
    q: CudaSlice<f32>,      // (n_head * head_dim), after RoPE
    att: CudaSlice<f32>,    // (n_head * head_dim)
    h: CudaSlice<f32>,      // (n_ff) silu(gate) * up
    /// The int8 chain's images (`chain.rs`, `image_bytes` of each width): attention's output
    /// (n_head * head_dim), the hidden row (n_ff).
    img_att: CudaSlice<u8>,
    img_h: CudaSlice<u8>,
    /// x's pending part where the FFN runs fused (`ffn.rs`): (n_embd) fixed-point values,
    /// then the word that marks a share that was not a number.
    pending: CudaSlice<i64>,
    logits: CudaSlice<f32>, // (vocab)
    /// The logits' argmax as matvec.cu's `argmax_key` (zeroed by embed_row, set by the head).
    best: CudaSlice<u64>,
    /// The sampler's candidates picked from the logits (`top_k.rs`).
    top: TopKBuffers,
    /// Split-attention partials (n_head, splits, head_dim + 2), sized for `splits`.
    part: CudaSlice<f32>,
    splits: usize,
    /// The prefill graph's buffers, made on its first chunk.
    prefill: Option<PrefillBuffers>,
    /// Where the decode token's layers run as one cluster launch (`cluster.rs`).
    cluster: Option<ClusterPlan>,
    /// Gemma 3's own buffers (`gemma.rs`).
    gemma: Option<gemma::GemmaBuffers>,
}

/// The index in an argmax key (matvec.cu's `argmax_key`: value bits high, !index low);
/// 0 when no logit was a number (key 0), as `sample::argmax` and topk.cu's `pick_argmax`
/// answer then.
fn argmax_of_key(key: u64) -> u32 {
    if key == 0 {
        0
    } else {
        crate::gpu::candidates::key_index(key)
    }
}

/// Prompt rows one prefill submission takes at most where a prompt chunk's attention runs
/// tiled (`prompt_attention_tiled`: the GEMMs and the tiled kernels take any row count, the
/// split kernel's partials grow with the rows): most prompts in one call, so each layer's
/// weights are decoded to f16 once per prompt rather than once per 256 rows.
/// `CMF_CUDA_PREFILL_ROWS` (16..=4096) sets it for measurement.
pub(super) const LONG_PREFILL_ROWS: usize = 1024;
/// Elsewhere, the session's chunk.
pub(super) const PREFILL_ROWS: usize = crate::pipeline::PREFILL_CHUNK;

/// The long-prompt row cap from its setting (`CMF_CUDA_PREFILL_ROWS`), or why not.
pub(super) fn long_prefill_rows(setting: Option<&str>) -> Result<usize, String> {
    match setting.map(str::trim) {
        None | Some("") => Ok(LONG_PREFILL_ROWS),
        Some(v) => v.parse::<usize>().ok().filter(|n| (16..=4096).contains(n)).ok_or_else(|| format!("CMF_CUDA_PREFILL_ROWS={v:?}: expected a row count from 16 to 4096")),
    }
}

/// Where a graph call lands: the model, the sequence and its position, and the host cache
/// that seeds the mirror when the mirror does not hold exactly `pos` rows.
struct At<'a> {
    model: &'a Llama,
    seq: u64,
    pos: usize,
    host_kv: &'a KvCache,
}

/// Device buffers of the batched prefill graph, for up to `rows` prompt rows.
pub(super) struct PrefillBuffers {
    rows: usize,
    tokens: CudaSlice<i32>, // (rows)
    x: CudaSlice<f32>,      // (rows, n_embd) residual stream
    q: CudaSlice<f32>,      // (rows, n_head * head_dim), after RoPE
    att: CudaSlice<f32>,    // (rows, n_head * head_dim)
    h: CudaSlice<f32>,      // (rows, n_ff) silu(gate) * up
    /// The tensor-core GEMMs' int8 input (`quantize_rows`): values (rows, widest input) and
    /// per 32-value group scale and scaled sum (rows, widest input / 32, 2).
    xq: CudaSlice<u8>,
    xd: CudaSlice<f32>,
    /// Split-attention partials (rows, n_head, part_splits, head_dim + 2); where a prompt
    /// chunk's attention runs tiled, the tensor-core pieces' (FLASH_PIECES a row and head) for
    /// the rows a chunk may have where it splits its keys (`flash_span`).
    part: CudaSlice<f32>,
    part_splits: usize,
    /// The cuBLAS path's scratch, where cuBLAS loaded and the model's layers are all Q4_0,
    /// Q4_1 or Q8_0 (and the scratch could be allocated).
    f16: Option<F16Scratch>,
    /// (1) Set by any kernel that rounds an f16 operand (the cuBLAS path's glue, the
    /// tensor-core attention) where a value is past f16's range or not a number: SPEC section
    /// 6's guard, read after the chunk (`run_prefill` then reruns it without f16 operands).
    f16_bad: CudaSlice<u32>,
}

/// Scratch of the cuBLAS prompt GEMMs (`blas.rs`).
pub(super) struct F16Scratch {
    /// The weights of one GEMM decoded to f16, side by side (Q, K, V; gate, up): the largest
    /// of (q_dim + 2 kv_dim, n_embd), (2 n_ff, n_embd), (n_embd, n_ff), (n_embd, q_dim).
    w: CudaSlice<u16>,
    /// A GEMM's f16 input (rows, widest input).
    x: CudaSlice<u16>,
    /// A GEMM's f32 output (rows, max(q_dim + 2 kv_dim, 2 n_ff, n_embd)).
    y: CudaSlice<f32>,
}

/// A captured CUDA graph of one token's launches.
pub(super) struct CapturedToken(CudaGraph);

// SAFETY: CUDA graph objects are not internally synchronized; this one is only touched
// while the backend's mirror lock is held, which serializes every access.
unsafe impl Send for CapturedToken {}

/// Bytes of one KV-mirror value: f16, as the host's `KvCache` and llama.cpp hold K and V
/// (kernels: `kv_t`).
pub(super) const KV_BYTES: usize = 2;

/// A sequence's KV mirror: per layer K and V rows of kv_dim f16 values (bits), and the token's
/// launch sequence captured as a CUDA graph against these buffers (replayed for every token).
pub(super) struct Mirror {
    k: Vec<CudaSlice<u16>>,
    v: Vec<CudaSlice<u16>>,
    len: usize,
    captured: Option<CapturedToken>,
    /// [token, pos] of this sequence's next graph call: written by the host, or by the device's
    /// pick for a token queued ahead (the captured graph reads them here, so another
    /// sequence's calls in between leave them alone).
    params: CudaSlice<i32>,
    /// Where a token's readback waits for the host, by the position's parity (a token queued
    /// ahead writes the other slot than the token before it, which the host may not have
    /// read yet): the device's pick of the next token (2), the candidates' keys (2, TOPK_MAX),
    /// and the event recorded after them.
    picks: CudaSlice<i32>,
    keys: CudaSlice<u64>,
    done: [CudaEvent; 2],
    /// The next token, already queued behind the last one on the device's own pick.
    ahead: Option<Ahead>,
    /// The cluster kernel's table for this mirror (`cluster::table_bytes`: the model's
    /// weights and this mirror's K / V rows), made before the token graph is captured.
    cluster_table: Option<CudaSlice<u8>>,
}

/// A token queued ahead: its position, what it reads back, and (once the token before it
/// was read back) the token it embeds.
pub(super) struct Ahead {
    pos: usize,
    read: TokenRead,
    token: Option<u32>,
}

/// What a decode token reads back (a `GraphReadback`'s kind, with the candidates' k).
#[derive(Clone, Copy, Debug, PartialEq)]
enum TokenRead {
    Logits,
    Argmax,
    TopK(usize),
}

impl TokenRead {
    fn of(out: &GraphReadback) -> TokenRead {
        match (out.device_top_k(), out.wants_logits()) {
            (Some(k), _) => TokenRead::TopK(k),
            (None, true) => TokenRead::Logits,
            (None, false) => TokenRead::Argmax,
        }
    }

    /// How the device picks the token after this one as the host will (the argmax, or the
    /// sampler's draw with its uniform draw `which`), where it can.
    fn next_pick(self, draw: Option<DrawSpec>, which: usize) -> Option<NextPick> {
        match (self, draw) {
            (TokenRead::Argmax, _) => Some(NextPick::Argmax),
            (TokenRead::TopK(_), Some(spec)) => Some(NextPick::Draw { spec, u: spec.draws[which] }),
            _ => None,
        }
    }
}

fn all_weights(m: &Llama) -> Vec<Weight> {
    let mut ws: Vec<Weight> = m.layers.iter().flat_map(|l| l.matrices()).collect();
    ws.push(m.output);
    ws.push(m.embed);
    ws
}

/// The refusal of a model with a codec that `kind` has no kernel for, naming every such codec
/// cortiq reads (a test keeps the list equal to `kind`'s gaps).
const CODEC_REFUSED: &str = "cannot build a graph: a weight codec has no CUDA kernel (of the codecs cortiq reads, only q2_k has none)";

/// Why this model cannot run as a graph, if it cannot (`smem_limit`: shared bytes a block
/// may stage).
pub(super) fn unsupported(m: &Llama, capacity: usize, smem_limit: usize) -> Option<&'static str> {
    if m.cfg.family == Family::Gemma3 && !gemma::takes(m) {
        return Some("cannot build a graph: a Gemma 3 layer without its q/k or sandwich norms, or not a tanh-GELU FFN");
    }
    if m.cfg.head_dim > MAX_HEAD_DIM || capacity >= i32::MAX as usize / m.cfg.kv_dim().max(1) {
        return Some("cannot build a graph: head size or context beyond the attention kernels");
    }
    if all_weights(m).iter().any(|w| kind(w.codec).is_none()) {
        return Some(CODEC_REFUSED);
    }
    if all_weights(m).iter().any(|w| kind(w.codec).is_some_and(|k| row_smem(k, w.cols) > smem_limit) || !super::layout::supports(w.codec, w.cols)) {
        return Some("cannot build a graph: a weight width has no CUDA kernel (not whole 32-value units, or its staged row exceeds the shared memory)");
    }
    let Some(first) = m.layers.first() else {
        return Some("cannot build a graph: the model has no layers");
    };
    if m.layers.iter().any(|l| [l.wq.codec, l.wk.codec].iter().any(|&c| kind(c) != kind(first.wq.codec)) || [l.gate.codec, l.up.codec].iter().any(|&c| kind(c) != kind(first.gate.codec))) {
        return Some("cannot build a graph: q/k or gate/up codecs differ (or differ between layers)");
    }
    if !m.cfg.head_dim.is_multiple_of(16) || !m.cfg.rope_dims.is_multiple_of(2) || m.cfg.rope_dims > m.cfg.head_dim {
        return Some("cannot build a graph: head size not a multiple of 16, or rotary width odd or wider than a head");
    }
    None
}

/// One layer's Q/K/V launches as (codec kind, first row, rows) of the three matrices' rows
/// (q, then k, then v; `RopeQkvMap` in graph.cu): one launch where V has Q's kind, else Q
/// and K in one and V in another (Q4_K_M's V is Q6_K in some layers).
fn qkv_parts(c: &LlamaConfig, qkind: i32, vkind: i32) -> Vec<(i32, usize, usize)> {
    let qk = c.q_dim() + c.kv_dim();
    if vkind == qkind {
        vec![(qkind, 0, qk + c.kv_dim())]
    } else {
        vec![(qkind, 0, qk), (vkind, qk, c.kv_dim())]
    }
}

/// Attention's head geometry.
#[derive(Clone, Copy)]
struct Heads {
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
}

impl Heads {
    fn of(c: &LlamaConfig) -> Heads {
        Heads { n_head: c.n_head, n_head_kv: c.n_head_kv, head_dim: c.head_dim }
    }
}

/// One layer's attention launch: `rows` query rows q (rows, n_head * head_dim, after RoPE) at
/// positions *pos.., each over the mirror's K / V rows (capacity, kv_dim) up to its own, into
/// out (rows, n_head * head_dim). The split kernel's grid has `splits` position blocks per
/// (head, row), sized for the context so a captured graph serves every position; its
/// partials `part` (rows, n_head, part_splits, head_dim + 2) are scratch (the tensor-core
/// prompt attention's pieces too, where it splits).
struct Attention<'a> {
    heads: Heads,
    q: &'a CudaSlice<f32>,
    k: &'a CudaSlice<u16>, // (capacity, kv_dim) f16
    v: &'a CudaSlice<u16>,
    part: &'a CudaSlice<f32>,
    out: &'a CudaSlice<f32>,
    /// Also the output's int8 image (one row, the token graph's int8 chain).
    out_img: Option<&'a CudaSlice<u8>>,
    /// Where prompt rows may take the tensor-core kernel (f16 operands): the guard's word it
    /// sets (`PrefillBuffers::f16_bad`). None keeps the attention in f32.
    f16_guard: Option<&'a CudaSlice<u32>>,
    pos: &'a CudaView<'a, i32>,
    rows: usize,
    splits: usize,
    part_splits: usize,
    /// The scores' scale.
    scale: f32,
    /// Positions a query sees on a sliding-window layer (0: all).
    window: usize,
    /// The keys the last row sees (its position + 1) where the host knows it (prompt chunks);
    /// 0 in a captured token, whose position the host does not fix.
    keys: usize,
}

/// Threads of an `attention_merge` block for heads of `head_dim` values: as many groups of
/// head_dim rounded up to a warp as fit 256 threads (at least one).
fn merge_threads(head_dim: usize) -> u32 {
    let dims = head_dim.next_multiple_of(32);
    (dims * (256 / dims).max(1)) as u32
}

impl CudaBackend {
    fn build_graph(&self, m: &Llama, capacity: usize, model_key: u64) -> Result<ModelGraph, String> {
        let splits = capacity.div_ceil(ATT_CHUNK);
        let c = &m.cfg;
        let s = &self.stream;
        let zeros = |n: usize| s.alloc_zeros::<f32>(n).map_err(err);
        let mut norms = Vec::new();
        for l in &m.layers {
            norms.push((s.clone_htod(&l.attn_norm).map_err(err)?, s.clone_htod(&l.ffn_norm).map_err(err)?));
        }
        Ok(ModelGraph {
            model_key,
            norms,
            out_norm: s.clone_htod(&m.output_norm).map_err(err)?,
            x: zeros(c.n_embd)?,
            q: zeros(c.q_dim())?,
            att: zeros(c.q_dim())?,
            h: zeros(c.n_ff)?,
            img_att: s.alloc_zeros::<u8>(image_bytes(c.q_dim())).map_err(err)?,
            img_h: s.alloc_zeros::<u8>(image_bytes(c.n_ff)).map_err(err)?,
            pending: s.alloc_zeros::<i64>(c.n_embd + 1).map_err(err)?,
            logits: zeros(c.vocab)?,
            best: s.alloc_zeros::<u64>(1).map_err(err)?,
            top: TopKBuffers::new(self, c.vocab)?,
            part: zeros(c.n_head * splits * (c.head_dim + 2))?,
            splits,
            prefill: None,
            cluster: self.cluster_plan(m),
            gemma: (c.family == Family::Gemma3).then(|| self.gemma_buffers(m)).transpose()?,
        })
    }

    /// Most prompt rows one prefill submission takes for `m` (`LONG_PREFILL_ROWS` or its
    /// setting where its attention runs tiled, else `PREFILL_ROWS`).
    pub(super) fn prefill_capacity(&self, m: &Llama) -> usize {
        if self.prompt_attention_tiled(m.cfg.head_dim) {
            self.long_prefill_rows
        } else {
            PREFILL_ROWS
        }
    }

    /// Whether a prompt chunk's attention for `head_dim` runs as row tiles rather than the
    /// split kernel: where the FP32 tiled kernel takes the head size and its shared memory
    /// fits. The tensor-core kernel (`prompt_flash`) takes the chunk instead where its f16
    /// operands are allowed; the FP32 kernel is its fallback (the f16 guard), so tiling rests
    /// on it.
    fn prompt_attention_tiled(&self, head_dim: usize) -> bool {
        ATTENTION_ROWS_DIMS.contains(&head_dim) && attention_rows_smem(head_dim) <= self.smem_limit
    }

    /// The tensor-core prompt attention kernel (name, threads) for a chunk of `rows` rows of
    /// heads of `head_dim`, a sliding-window layer's where `windowed`, where there is one, it
    /// is on and the chunk's attention runs tiled.
    fn prompt_flash(&self, head_dim: usize, rows: usize, windowed: bool) -> Option<(&'static str, u32)> {
        let tiled = rows > 1 && self.flash && self.prompt_attention_tiled(head_dim);
        let kernels = if windowed { &FLASH_WINDOW } else { &FLASH_ROWS };
        kernels.iter().find(|(hd, ..)| *hd == head_dim && tiled).map(|&(_, name, threads)| (name, threads))
    }

    /// The prefill graph's buffers for `m`, its partials sized for `splits` per row and head.
    fn prefill_buffers(&self, m: &Llama, splits: usize) -> Result<PrefillBuffers, String> {
        let c = &m.cfg;
        let s = &self.stream;
        let n = self.prefill_capacity(m);
        let tiled = self.prompt_attention_tiled(c.head_dim);
        let (part_rows, part_splits) = if tiled { ((64 * (self.sms as usize / (2 * c.n_head))).clamp(1, n), FLASH_PIECES) } else { (n, splits) };
        let zeros = |len: usize| s.alloc_zeros::<f32>(len).map_err(err);
        let widest = c.n_embd.max(c.n_ff).max(c.q_dim());
        Ok(PrefillBuffers {
            rows: n,
            tokens: s.alloc_zeros::<i32>(n).map_err(err)?,
            x: zeros(n * c.n_embd)?,
            q: zeros(n * c.q_dim())?,
            att: zeros(n * c.q_dim())?,
            h: zeros(n * c.n_ff)?,
            xq: s.alloc_zeros::<u8>(n * widest).map_err(err)?,
            xd: zeros(n * widest / 16)?,
            part: zeros(part_rows * c.n_head * part_splits * (c.head_dim + 2))?,
            part_splits,
            f16: self.f16_scratch(m, n),
            f16_bad: s.alloc_zeros::<u32>(1).map_err(err)?,
        })
    }

    /// The cuBLAS path's scratch for `m` and `n` prompt rows: None without cuBLAS, where a
    /// layer weight has no f16 decoder (`dequant_f16`: the int8-dotted kinds and F16), or where the device
    /// has no room for it (the int8 GEMMs need none).
    fn f16_scratch(&self, m: &Llama, n: usize) -> Option<F16Scratch> {
        let c = &m.cfg;
        self.blas.as_ref().ok()?;
        if !m.layers.iter().flat_map(|l| l.matrices()).all(|w| kind(w.codec).is_some_and(super::f16_decodable)) {
            return None;
        }
        let (d, ff, qkv) = (c.n_embd, c.n_ff, c.q_dim() + 2 * c.kv_dim());
        let s = &self.stream;
        Some(F16Scratch {
            w: s.alloc_zeros::<u16>((qkv * d).max(2 * ff * d).max(d * c.q_dim())).ok()?,
            x: s.alloc_zeros::<u16>(n * d.max(ff).max(c.q_dim())).ok()?,
            y: s.alloc_zeros::<f32>(n * qkv.max(2 * ff).max(d)).ok()?,
        })
    }

    /// Queue one attention launch: a prompt chunk's rows 64 to a block on the tensor cores
    /// where the head size has a kernel for it (`FLASH_ROWS`) and the call allows f16
    /// operands (`Attention::f16_guard`; where few tiles would leave SMs idle, their keys
    /// split into pieces (`flash_span`) and the pieces merged), else 32 to a block where it has
    /// the tiled kernel (`attention_rows_d*`), otherwise (a decode token, or other head sizes)
    /// the split kernel with one grid layer per row (`part` sized for them), then the merge
    /// of its partials (`attention_merge`).
    fn launch_attention(&self, a: &Attention, overlap: bool) -> Result<(), String> {
        let s = &self.stream;
        let c = a.heads;
        let scale = a.scale;
        let (nh, nkv, hd) = (c.n_head as i32, c.n_head_kv as i32, c.head_dim as i32);
        let mut args = KernelArgs::default();
        let prompt = a.rows > 1 && self.prompt_attention_tiled(c.head_dim);
        let flash = self.prompt_flash(c.head_dim, a.rows, a.window > 0).zip(a.f16_guard);
        let window = i32::try_from(a.window).map_err(|_| "attention window beyond the kernels' i32 positions")?;
        let (f, cfg) = if let Some(((name, threads), bad)) = flash {
            let tiles = a.rows.div_ceil(64);
            let slots = if a.part.len() >= a.rows * c.n_head * a.part_splits * (c.head_dim + 2) { a.part_splits } else { 0 };
            let span = if self.flash_split { flash_span(c.n_head, tiles, a.keys, self.sms as usize, slots) } else { 0 };
            let pieces = if span == 0 { 1 } else { a.keys.div_ceil(span) };
            args.buf(a.q, s).buf(a.k, s).buf(a.v, s).buf(a.out, s).buf(a.part, s).int(nh).int(nkv).buf(a.pos, s).float(scale).int(a.rows as i32).int(window).int(span as i32).int(a.part_splits as i32).buf(bad, s);
            let flash_cfg = LaunchConfig { grid_dim: (c.n_head as u32, tiles as u32, pieces as u32), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
            if span == 0 {
                (&self.funcs[name], flash_cfg)
            } else {
                // SAFETY: as the launch below; the pieces' partials fit `part` (slots checked above).
                unsafe { launch(s, &self.funcs[name], flash_cfg, &args, overlap) }.map_err(err)?;
                let merge_cfg;
                (args, merge_cfg) = self.merge_launch(a, None, window, span);
                (&self.funcs["attention_merge"], merge_cfg)
            }
        } else if prompt {
            args.buf(a.q, s).buf(a.k, s).buf(a.v, s).buf(a.out, s).int(nh).int(nkv).buf(a.pos, s).float(scale).int(a.rows as i32).int(window);
            (&self.funcs[&format!("attention_rows_d{}", c.head_dim / 32)], LaunchConfig { grid_dim: (c.n_head as u32, a.rows.div_ceil(32) as u32, 1), block_dim: (ATT_ROWS_THREADS as u32, 1, 1), shared_mem_bytes: attention_rows_smem(c.head_dim) as u32 })
        } else {
            args.buf(a.q, s).buf(a.k, s).buf(a.v, s).buf(a.part, s).buf(a.out, s);
            match a.out_img {
                Some(img) if a.rows == 1 && hd % 32 == 0 => args.buf(img, s),
                Some(_) => return Err("an attention image is of one row of whole 32-value groups".into()),
                None => args.null(),
            };
            args.int(nh).int(nkv).int(hd).buf(a.pos, s).float(scale).int(a.part_splits as i32).int(super::att_group::group_from(self.att_group_from, c.n_head_kv, self.sms)).int(window);
            let split_cfg = LaunchConfig { grid_dim: (c.n_head as u32, a.splits as u32, a.rows as u32), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: as the launch below.
            unsafe { launch(s, &self.funcs[attention_split_kernel(c.head_dim, a.window > 0)], split_cfg, &args, overlap) }.map_err(err)?;
            let merge_cfg;
            (args, merge_cfg) = self.merge_launch(a, a.out_img, window, ATT_CHUNK);
            (&self.funcs["attention_merge"], merge_cfg)
        };
        // SAFETY: the buffers hold the shapes the struct's doc gives (the callers allocate
        // them for the model's geometry and the mirror's capacity); the arguments follow the
        // kernels' parameter lists in graph.cu.
        unsafe { launch(s, f, cfg, &args, overlap) }.map_err(err)
    }

    /// `attention_merge`'s arguments and grid for `a`'s partials, each covering `span`
    /// positions (ATT_CHUNK for the split kernel's, a piece's keys for the tensor-core
    /// tiles'), writing out and, where `img` names it, the output's int8 image.
    fn merge_launch(&self, a: &Attention, img: Option<&CudaSlice<u8>>, window: i32, span: usize) -> (KernelArgs, LaunchConfig) {
        let s = &self.stream;
        let c = a.heads;
        let mut args = KernelArgs::default();
        args.buf(a.part, s).buf(a.out, s);
        match img {
            Some(img) => args.buf(img, s),
            None => args.null(),
        };
        args.int(c.n_head as i32).int(c.head_dim as i32).buf(a.pos, s).int(a.part_splits as i32).int(window).int(span as i32);
        (args, LaunchConfig { grid_dim: (c.n_head as u32, a.rows as u32, 1), block_dim: (merge_threads(c.head_dim), 1, 1), shared_mem_bytes: 0 })
    }

    /// Test hook: attention of `rows` query rows q (rows, n_head * head_dim, after RoPE) at
    /// positions `k.len() / kv_dim - rows ..`, each over the `k` / `v` rows (positions,
    /// n_head_kv * head_dim, rounded to f16 as the mirror holds them) up to its own, the last
    /// `window` of them where window > 0 (a sliding-window layer's), through
    /// the launch the graphs make (one row: a decode token's split kernel; more: a prompt
    /// chunk's, rerun in f32 where the f16 guard trips, as the prefill graph does). The output
    /// (rows, n_head * head_dim) is poisoned with NaN before the kernel runs.
    pub fn attention(&self, q: &[f32], k: &[f32], v: &[f32], rows: usize, (n_head, n_head_kv, head_dim): (usize, usize, usize), window: usize) -> Result<Vec<f32>, String> {
        let kvd = n_head_kv * head_dim;
        let n = k.len().checked_div(kvd).unwrap_or(0);
        if rows == 0 || n < rows || n_head == 0 || !head_dim.is_multiple_of(16) || head_dim > MAX_HEAD_DIM || !n_head.is_multiple_of(n_head_kv) || q.len() != rows * n_head * head_dim || k.len() != n * kvd || v.len() != k.len() {
            return Err("attention shapes outside the kernels' range".into());
        }
        let s = &self.stream;
        let splits = n.div_ceil(ATT_CHUNK);
        let f16_bits = |x: &[f32]| x.iter().map(|&x| half::f16::from_f32(x).to_bits()).collect::<Vec<u16>>();
        let (qd, kd, vd) = (s.clone_htod(q).map_err(err)?, s.clone_htod(&f16_bits(k)).map_err(err)?, s.clone_htod(&f16_bits(v)).map_err(err)?);
        let out = s.clone_htod(&vec![f32::NAN; q.len()]).map_err(err)?;
        let slots = splits.max(FLASH_PIECES);
        let part = s.alloc_zeros::<f32>(rows * n_head * slots * (head_dim + 2)).map_err(err)?;
        let pos = s.clone_htod(&[(n - rows) as i32]).map_err(err)?;
        let pos_ptr = pos.slice(0..1);
        let bad = s.alloc_zeros::<u32>(1).map_err(err)?;
        let att = Attention { heads: Heads { n_head, n_head_kv, head_dim }, q: &qd, k: &kd, v: &vd, part: &part, out: &out, out_img: None, f16_guard: Some(&bad), pos: &pos_ptr, rows, splits, part_splits: slots, scale: 1.0 / (head_dim as f32).sqrt(), window, keys: n };
        self.launch_attention(&att, false)?;
        if s.clone_dtoh(&bad).map_err(err)?[0] != 0 {
            self.launch_attention(&Attention { f16_guard: None, ..att }, false)?;
        }
        s.clone_dtoh(&out).map_err(err)
    }

    /// A mirror for `at.seq` holding exactly `at.pos` rows, seeded from the host cache if needed.
    fn mirror_at(&self, mirrors: &mut HashMap<u64, Mirror>, at: &At) -> Result<(), String> {
        let c = &at.model.cfg;
        let (kvd, cap) = (c.kv_dim(), at.host_kv.capacity());
        if let std::collections::hash_map::Entry::Vacant(slot) = mirrors.entry(at.seq) {
            // A reset sequence's mirror of the same geometry is reused as it is: rows past a
            // sequence's length are never read, and its captured token graph reads token and
            // position from the model's buffers.
            let spare = self.spare_mirror.lock().unwrap_or_else(|e| e.into_inner()).take().filter(|m| m.k.len() == c.n_layer && m.k.first().is_some_and(|k| k.len() == cap * kvd));
            let mirror = match spare {
                Some(m) => Mirror { len: 0, ahead: None, ..m },
                None => {
                    let mut k = Vec::new();
                    let mut v = Vec::new();
                    for _ in 0..c.n_layer {
                        k.push(self.stream.alloc_zeros::<u16>(cap * kvd).map_err(err)?);
                        v.push(self.stream.alloc_zeros::<u16>(cap * kvd).map_err(err)?);
                    }
                    let (params, picks) = (self.stream.alloc_zeros::<i32>(2).map_err(err)?, self.stream.alloc_zeros::<i32>(2).map_err(err)?);
                    let keys = self.stream.alloc_zeros::<u64>(2 * TOPK_MAX).map_err(err)?;
                    let event = || self.stream.context().new_event(None).map_err(err);
                    Mirror { k, v, len: 0, captured: None, params, picks, keys, done: [event()?, event()?], ahead: None, cluster_table: None }
                }
            };
            slot.insert(mirror);
        }
        let mirror = mirrors.get_mut(&at.seq).expect("inserted above");
        if mirror.len != at.pos {
            // Seed from the host cache (the same f16 values): a zero state is never assumed.
            let n = at.pos * kvd;
            for l in 0..c.n_layer {
                let (keys, values): (&[u16], &[u16]) = (bytemuck::cast_slice(at.host_kv.keys(l, at.pos)), bytemuck::cast_slice(at.host_kv.values(l, at.pos)));
                self.stream.memcpy_htod(keys, &mut mirror.k[l].slice_mut(0..n)).map_err(err)?;
                self.stream.memcpy_htod(values, &mut mirror.v[l].slice_mut(0..n)).map_err(err)?;
            }
            mirror.len = at.pos;
        }
        Ok(())
    }

    /// Run one token through the graph; `out` is written only on success. Where the device
    /// picks the next token as the host will (greedy: the argmax; sampled with the sampler's
    /// draw spec: drawn from the candidates), that token is queued behind this one before
    /// this one is read back (on the readback stream), so the device does not wait for the
    /// host between tokens; the host's next call takes it when it feeds that same token at
    /// the next position (else it is dropped and the call runs its own). Not under
    /// `CMF_GRAPH_HOSTPROF`, whose GPU tail is the time of one token.
    pub(super) fn run_graph(&self, job: &TokenGraphJob, out: GraphReadback) -> DeviceOutcome {
        let m = job.model;
        if job.layers != m.layers.len() {
            return DeviceOutcome::Declined("the CUDA token graph runs whole tokens only (no device prefix)");
        }
        let read = TokenRead::of(&out);
        let draw = out.device_draw();
        let capacity = job.host_kv.capacity();
        let at = At { model: m, seq: job.seq, pos: job.pos, host_kv: job.host_kv };
        self.on_graph(&at, 1, out, true, |g, mirror, map| {
            let at_this = mirror.ahead.take().filter(|a| a.pos == job.pos);
            let taken = at_this.as_ref().is_some_and(|a| a.token == Some(job.token) && a.read == read);
            let dropped = at_this.is_some() && !taken;
            if !taken {
                self.stream.memcpy_htod(&[job.token as i32, job.pos as i32], &mut mirror.params).map_err(err)?;
                self.launch_token(m, map, g, mirror)?;
                if read == TokenRead::Logits {
                    let queued = std::time::Instant::now();
                    return Ok(Ok((self.read_now(g, read)?, queued)));
                }
                self.queue_readback(g, mirror, job.pos, read, read.next_pick(draw, 0))?;
            }
            let next = read.next_pick(draw, 1).filter(|_| !self.hostprof && job.pos + 1 < capacity);
            if next.is_some() {
                // The device's pick (pick_argmax, or topk_merge's draw) wrote the next token and
                // position into the mirror's params.
                self.launch_token(m, map, g, mirror)?;
                self.queue_readback(g, mirror, job.pos + 1, read, next)?;
                mirror.ahead = Some(Ahead { pos: job.pos + 1, read, token: None });
            }
            let queued = std::time::Instant::now();
            let (back, pick) = self.read_token(mirror, job.pos, read)?;
            if let (Some(a), Some(t)) = (mirror.ahead.as_mut(), pick) {
                a.token = Some(t);
            }
            let mut p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
            p.tokens_ahead += u64::from(taken);
            p.ahead_dropped += u64::from(dropped);
            Ok(Ok((back, queued)))
        })
    }

    /// Launch one token's kernels (token and position in the mirror's params): the sequence's
    /// captured graph, captured on its first token, or the launches themselves where capture
    /// fails.
    fn launch_token(&self, m: &Llama, map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror) -> Result<(), String> {
        // The weight list is only needed to capture a sequence's launches, not per token.
        let args = || -> Vec<WeightArg> { all_weights(m).iter().map(|w| m.weight_arg(w)).collect() };
        if mirror.captured.is_none() {
            if let (Some(plan), None) = (&g.cluster, &mirror.cluster_table) {
                mirror.cluster_table = Some(self.cluster_table(m, plan, &args(), map, g, mirror)?);
                self.note_graph(format!("layers as one launch of a {CLUSTER_BLOCKS}-block cluster ({})", plan.kernel));
            }
            mirror.captured = self.capture(m, &args(), map, g, mirror)?;
        }
        match &mirror.captured {
            Some(c) => c.0.launch().map_err(err),
            None => self.queue_token(m, &args(), map, g, mirror, mirror.k[0].len() / m.cfg.kv_dim().max(1)),
        }
    }

    /// Add `note` to what `--explain` says of the graphs (once).
    fn note_graph(&self, note: String) {
        let mut p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
        if !p.graph_notes.contains(&note) {
            p.graph_notes.push(note);
        }
    }

    /// Queue what the token at `pos` leaves for the host in its parity's slots of `mirror`:
    /// the candidates' keys (`TopK`), and with `next` the device's pick of the next token
    /// (also written to the mirror's params for a token queued behind it); then the slot's
    /// event, which the host waits for.
    fn queue_readback(&self, g: &ModelGraph, mirror: &Mirror, pos: usize, read: TokenRead, next: Option<NextPick>) -> Result<(), String> {
        let slot = pos % 2;
        let keys = mirror.keys.slice(slot * TOPK_MAX..(slot + 1) * TOPK_MAX);
        let to = || PickTo { params: &mirror.params, pick: mirror.picks.slice(slot..slot + 1) };
        match (read, next) {
            (TokenRead::TopK(k), Some(NextPick::Draw { spec, u })) => self.queue_top_k(&g.logits, &g.top, k, &keys, Some((&spec, u, to())))?,
            (TokenRead::TopK(k), _) => self.queue_top_k(&g.logits, &g.top, k, &keys, None)?,
            (_, Some(NextPick::Argmax)) => self.queue_argmax_pick(&g.best, to())?,
            _ => {}
        }
        mirror.done[slot].record(&self.stream).map_err(err)
    }

    /// The readback of the token at `pos` (`queue_readback`'s slots, once their event has
    /// passed), read on the readback stream so that a token queued behind it keeps running:
    /// what `read` asks for, and the device's pick of the next token where it made one.
    fn read_token(&self, mirror: &Mirror, pos: usize, read: TokenRead) -> Result<(GraphRead, Option<u32>), String> {
        let (slot, r) = (pos % 2, &self.readback);
        r.wait(&mirror.done[slot]).map_err(err)?;
        let mut pick = [0i32];
        let picked = |pick: &mut [i32; 1]| r.memcpy_dtoh(&mirror.picks.slice(slot..slot + 1), pick).map_err(err);
        match read {
            TokenRead::Argmax => {
                picked(&mut pick)?;
                Ok((GraphRead::Argmax(pick[0] as u32), Some(pick[0] as u32)))
            }
            TokenRead::TopK(k) => {
                let cand = read_candidates(r, &mirror.keys, slot * TOPK_MAX, k)?;
                let drawn = match mirror.ahead {
                    Some(_) => {
                        picked(&mut pick)?;
                        Some(pick[0] as u32)
                    }
                    None => None,
                };
                Ok((GraphRead::TopK(cand), drawn))
            }
            TokenRead::Logits => unreachable!("logits are read on the stream itself"),
        }
    }

    /// Run a prompt chunk through the batched prefill graph; `out` (the last position's) is
    /// written only on success. Where a value past f16's range reached an f16 operand (SPEC
    /// section 6's guard, `PrefillBuffers::f16_bad`), the chunk runs again on the int8 and
    /// f32 kernels, rewriting the same mirror rows.
    pub(super) fn run_prefill(&self, job: &PrefillGraphJob, out: GraphReadback) -> DeviceOutcome {
        let m = job.model;
        let rows = job.tokens.len();
        if job.layers != m.layers.len() {
            return DeviceOutcome::Declined("the CUDA prefill graph runs whole chunks only (no device prefix)");
        }
        if m.cfg.family == Family::Gemma3 && self.blas.is_err() {
            // Not "cannot build": the token graph still takes the model.
            return DeviceOutcome::Declined(gemma::NO_CUBLAS);
        }
        if rows == 0 || rows > self.prefill_capacity(m) {
            return DeviceOutcome::Declined("prompt chunk longer than the prefill graph takes (Backend::prefill_rows)");
        }
        let at = At { model: m, seq: job.seq, pos: job.pos, host_kv: job.host_kv };
        let read = TokenRead::of(&out);
        self.on_graph(&at, rows, out, false, |g, mirror, map| {
            let tokens: Vec<i32> = job.tokens.iter().map(|&t| t as i32).collect();
            if g.prefill.is_none() {
                g.prefill = Some(self.prefill_buffers(m, g.splits)?);
            }
            let pb = g.prefill.as_mut().expect("made above");
            self.stream.memcpy_htod(&tokens, &mut pb.tokens.slice_mut(0..rows)).map_err(err)?;
            self.stream.memcpy_htod(&[0, job.pos as i32], &mut mirror.params).map_err(err)?;
            let args: Vec<WeightArg> = all_weights(m).iter().map(|w| m.weight_arg(w)).collect();
            if m.cfg.family == Family::Gemma3 {
                return self.run_gemma_prefill(m, &args, map, g, mirror, rows, read);
            }
            let f16_ran = self.queue_prefill(m, &args, map, g, mirror, rows, true)?;
            let queued = std::time::Instant::now();
            if f16_ran && self.f16_guard_tripped(g.prefill.as_ref().expect("made above"), "a prompt chunk's values exceed f16's range; such chunks run again on the int8 and f32 kernels (slower)")? {
                self.queue_prefill(m, &args, map, g, mirror, rows, false)?;
            }
            Ok(Ok((self.read_now(g, read)?, queued)))
        })
    }

    /// Whether a prefill chunk's f16 operand guard tripped (read back after its work):
    /// counted, and `warning` said once per backend.
    fn f16_guard_tripped(&self, pb: &PrefillBuffers, warning: &str) -> Result<bool, String> {
        if self.stream.clone_dtoh(&pb.f16_bad).map_err(err)?[0] == 0 {
            return Ok(false);
        }
        if self.count(|p| &mut p.prefill_f16_reruns) == 1 {
            eprintln!("cortiq: CUDA: {warning}");
        }
        Ok(true)
    }

    /// The frame of every graph call: the model's buffers (built, and every weight made
    /// resident, when the model or the context size changes), the sequence's mirror holding
    /// exactly `at.pos` rows, then `run` (which queues the work and reads back what `out` asks
    /// for, saying when it had queued it, or declines after all: the mirror keeps its rows and
    /// is seeded again from the host cache on the next call), `out` filled, and the mirror
    /// `rows` longer. Token calls (`token`) and prefill chunks feed their own
    /// `CMF_GRAPH_HOSTPROF` counters.
    #[allow(clippy::type_complexity)]
    fn on_graph(&self, at: &At, rows: usize, out: GraphReadback, token: bool, run: impl FnOnce(&mut ModelGraph, &mut Mirror, &HashMap<u64, Resident>) -> Result<Result<(GraphRead, std::time::Instant), &'static str>, String>) -> DeviceOutcome {
        let m = at.model;
        let mut graph = self.graph.lock().unwrap_or_else(|e| e.into_inner());
        let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        let capacity = at.host_kv.capacity();
        let key = model_key(m);
        let mut cold = false;
        if graph.as_ref().is_none_or(|g| g.model_key != key || g.splits < capacity.div_ceil(ATT_CHUNK)) {
            // Whether the model fits the kernels depends only on the model and the context
            // size: checked when they change, not per call.
            if let Some(why) = unsupported(m, capacity, self.smem_limit) {
                return DeviceOutcome::Declined(why);
            }
            // Every weight resident and proven by its fingerprint, once per graph build (not
            // per token: that would hash every tensor on the hot path).
            let args: Vec<WeightArg> = all_weights(m).iter().map(|w| m.weight_arg(w)).collect();
            let refs: Vec<&WeightArg> = args.iter().collect();
            let downs: Vec<&WeightArg> = if self.ffn_fuses(m) { args[..m.cfg.n_layer * 7].iter().skip(6).step_by(7).collect() } else { Vec::new() };
            cold = match self.ensure(&refs).and_then(|c| Ok(self.ensure_layout(&downs, true)? || c)) {
                Ok(c) => c,
                Err(u) => return u.outcome(true),
            };
            // Captured launch sequences point at the old buffers: drop them with the buffers
            // (and the spare mirror, which may have another geometry).
            mirrors.values_mut().for_each(|mi| {
                mi.captured = None;
                mi.ahead = None;
            });
            *self.spare_mirror.lock().unwrap_or_else(|e| e.into_inner()) = None;
            match self.build_graph(m, capacity, key) {
                Ok(g) => *graph = Some(g),
                Err(e) => return DeviceOutcome::Failed(e),
            }
        }
        let g = graph.as_mut().expect("built above");
        let map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let ts = std::time::Instant::now();
        let result = self.mirror_at(&mut mirrors, at).and_then(|()| {
            let mirror = mirrors.get_mut(&at.seq).expect("mirror_at made it");
            let t0 = std::time::Instant::now();
            let (back, queued) = match run(g, mirror, &map)? {
                Ok(done) => done,
                Err(why) => return Ok(Err(why)),
            };
            let mut p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
            if token {
                p.tokens += 1;
                p.host += queued - t0;
                p.tail += queued.elapsed();
            } else {
                p.prefill_chunks += 1;
                p.prefill_rows += rows as u64;
                p.prefill_setup += t0 - ts;
                p.prefill_host += queued - t0;
                p.prefill_tail += queued.elapsed();
            }
            mirror.len = at.pos + rows;
            if let Some(t) = self.trace.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                t.drain(&self.stream)?;
            }
            Ok(Ok(back))
        });
        match result {
            Ok(Ok(back)) => {
                out.fill(back);
                DeviceOutcome::Completed { cold }
            }
            Ok(Err(why)) => DeviceOutcome::Declined(why),
            Err(e) => {
                mirrors.remove(&at.seq);
                DeviceOutcome::Failed(e)
            }
        }
    }

    /// What `read` asks for, read back on the stream itself once the work queued on it ends.
    fn read_now(&self, g: &mut ModelGraph, read: TokenRead) -> Result<GraphRead, String> {
        Ok(match read {
            TokenRead::TopK(k) => {
                self.queue_top_k(&g.logits, &g.top, k, &g.top.keys, None)?;
                GraphRead::TopK(read_candidates(&self.stream, &g.top.keys, 0, k)?)
            }
            TokenRead::Logits => GraphRead::Logits(self.stream.clone_dtoh(&g.logits).map_err(err)?),
            TokenRead::Argmax => {
                let mut key = [0u64];
                self.stream.memcpy_dtoh(&g.best, &mut key).map_err(err)?;
                GraphRead::Argmax(argmax_of_key(key[0]))
            }
        })
    }

    /// Whether the token graph runs `m`'s FFNs fused (`ffn.rs`): the setting takes its size,
    /// both links of the int8 chain are on (the output projection folds the pending part), and
    /// each layer's down projection has gate's codec kind, one the fused kernels take (`ffn::KINDS`).
    fn ffn_fuses(&self, m: &Llama) -> bool {
        let quantized = m.layers.iter().flat_map(|l| l.matrices()).all(|w| kind(w.codec).is_some_and(super::int8_kind));
        let chain = self.int8_chain.for_model(quantized, m.cfg.head_dim);
        m.cfg.family == Family::Llama && self.fused_ffn.takes(m.cfg.n_ff, m.cfg.n_embd) && chain.attn && chain.glu && m.layers.iter().all(|l| kind(l.down.codec) == kind(l.gate.codec) && kind(l.gate.codec).is_some_and(|k| super::ffn::KINDS.contains(&k)))
    }

    /// The cluster kernel's plan for `m`, where the path is on (`with_cluster`), its layers
    /// share one codec kind, the kernels were loaded (sm_90+) and a cluster of its blocks fits.
    fn cluster_plan(&self, m: &Llama) -> Option<ClusterPlan> {
        if !self.cluster || m.cfg.family != Family::Llama {
            return None;
        }
        let kinds: Vec<Option<i32>> = m.layers.iter().flat_map(|l| l.matrices()).map(|w| kind(w.codec)).collect();
        let first = (*kinds.first()?)?;
        if kinds.iter().any(|&k| k != Some(first)) {
            return None;
        }
        let plan = cluster::plan(&m.cfg, first, self.smem_limit).ok()?;
        let f = self.funcs.get(&plan.kernel)?;
        (active_clusters(&self.stream, f, plan.launch_config(), CLUSTER_BLOCKS as u32).ok()? > 0).then_some(plan)
    }

    /// Upload the cluster kernel's table for `mirror`: per layer the resident weights' and
    /// norms' addresses and the mirror's K / V rows.
    fn cluster_table(&self, m: &Llama, plan: &ClusterPlan, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &ModelGraph, mirror: &Mirror) -> Result<CudaSlice<u8>, String> {
        let s = &self.stream;
        let mut rows = Vec::with_capacity(m.cfg.n_layer);
        for li in 0..m.cfg.n_layer {
            let mut row = ClusterLayer::default();
            for (i, w) in args[li * 7..li * 7 + 7].iter().enumerate() {
                let r = map.get(&w.key).ok_or("weight not resident")?;
                row.w[i] = r.data.device_ptr(s).0;
                row.a_off[i] = r.a_off;
            }
            row.attn_norm = g.norms[li].0.device_ptr(s).0;
            row.ffn_norm = g.norms[li].1.device_ptr(s).0;
            row.kc = mirror.k[li].device_ptr(s).0;
            row.vc = mirror.v[li].device_ptr(s).0;
            rows.push(row);
        }
        s.clone_htod(&cluster::table_bytes(plan, &rows)).map_err(err)
    }

    /// Capture one token's launches into a CUDA graph (None if capture is not possible or
    /// was invalidated CAPTURE_ATTEMPTS times; the caller then queues the launches directly,
    /// and the next token tries again).
    fn capture(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror) -> Result<Option<CapturedToken>, String> {
        let capacity = mirror.k[0].len() / m.cfg.kv_dim().max(1);
        for _ in 0..CAPTURE_ATTEMPTS {
            self.stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(err)?;
            let queued = self.queue_token(m, args, map, g, mirror, capacity);
            match self.stream.end_capture(CUgraphInstantiate_flags(0)) {
                Ok(graph) => {
                    queued?;
                    return Ok(graph.map(CapturedToken));
                }
                // Nothing captured ran; the stream is out of capture mode again.
                Err(e) if e.0 == CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED => {
                    if self.count(|p| &mut p.captures_invalidated) == 1 {
                        eprintln!("cortiq: a CUDA graph capture was invalidated by other work on the device; capturing again");
                    }
                }
                Err(e) => return Err(err(e)),
            }
        }
        self.count(|p| &mut p.tokens_uncaptured);
        Ok(None)
    }

    /// Add one to the graph profile's counter that `field` picks; its new value.
    fn count(&self, field: impl FnOnce(&mut GraphProfile) -> &mut u64) -> u64 {
        let mut p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
        let c = field(&mut p);
        *c += 1;
        *c
    }

    /// Queue every kernel of one token (token and position are read from the mirror's params):
    /// per layer qkv_rope (attention norm, RoPE and the mirror append fused), attention
    /// (split, then the merge of its partials), o-proj (+residual), gate_up_silu (FFN norm
    /// fused), down (+residual); then the head with the final norm fused (Gemma 3: its own
    /// layer, `gemma.rs`). `args` is `all_weights` order; `capacity` sizes the
    /// split-attention grid.
    fn queue_token(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror, capacity: usize) -> Result<(), String> {
        let c = &m.cfg;
        if c.family == Family::Gemma3 {
            return self.queue_gemma_token(m, args, map, g, mirror, capacity);
        }
        let s = &self.stream;
        let dev = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let kd = |w: &WeightArg| kind(w.view.codec).expect("checked by unsupported()");
        let (d, ff) = (c.n_embd as i32, c.n_ff as i32);
        let (nh, nkv, hd, rot) = (c.n_head as i32, c.n_head_kv as i32, c.head_dim as i32, c.rope_dims as i32);
        let (eps, base, neox) = (c.eps, c.rope_base, c.rope_neox as i32);
        let pos_ptr = mirror.params.slice(1..2);
        let grid_splits = capacity.div_ceil(ATT_CHUNK);
        // Kinds are uniform within q/k and within gate/up (checked by unsupported()); V's may
        // differ by layer (`qkv_parts`).
        let (qkind, gkind) = (kd(&args[0]), kd(&args[4]));
        let chain = self.int8_chain.for_model(args[..c.n_layer * 7].iter().all(|w| super::int8_kind(kd(w))), c.head_dim);
        // Gate/up rows come in (gate, up) pairs, so 2 or 4 rows per warp group, whichever
        // balances the warps of the grid (as wide for both); writing the hidden row's int8
        // image, 4 (its blocks take whole units of 32 pairs). The row kernels the chain
        // feeds, and those feeding it, keep their blocks spread (`spread.rs`).
        // Where the FFN runs fused, x has a pending part that QKV and the head stage with it.
        let fused = if self.ffn_fuses(m) { self.fused_ffn_launch(gkind, c.n_ff / 32, c.n_embd)? } else { None };
        let pending = fused.is_some().then_some(&g.pending);
        if let Some((_, cfg, nu)) = fused {
            self.note_graph(format!("FFN as one launch a layer ({}, {} blocks)", super::ffn::kernel(gkind, nu), cfg.grid_dim.0));
        }
        let qkv_name = if pending.is_some() { "qkv_rope_pend" } else { "qkv_rope" };
        let qkv_launch = |kind: i32, rows: usize| self.spread_row_launch(&super::row_kernel(qkv_name, kind, 2), rows, 2, row_smem(kind, c.n_embd));
        let (glu_f, glu_cfg) = if chain.glu {
            self.unit_launch(&super::row_kernel("gate_up_q8", gkind, 4), c.n_ff / 32, row_smem(gkind, c.n_embd))?
        } else {
            self.glu_launch("gate_up_silu", gkind, c)?
        };
        // Every launch but the first may overlap the one before it (`launch::launch`).
        let ov = self.overlap;
        self.launch_embed(m, args, map, (&mirror.params.slice(0..1), 1), &g.x, &g.best, pending)?;
        // SAFETY (every launch below): buffer sizes are the model's geometry, allocated in
        // build_graph / mirror_at for exactly these shapes (images: `image_bytes` of each
        // width); positions are bounded by the mirror capacity (the session checks it
        // before the call); staged rows fit the shared memory granted (checked by
        // unsupported()); the arguments follow the kernels' parameter lists in graph.cu
        // and matvec.cu.
        // The layers as one cluster launch where the model has a plan, else launch by launch.
        let looped_layers = if let (Some(plan), Some(table)) = (&g.cluster, &mirror.cluster_table) {
            let mut a = KernelArgs::default();
            a.buf(table, s).buf(&pos_ptr, s).buf(&g.x, s);
            // SAFETY: the table holds this model's resident weights, norms and this mirror's
            // K / V rows (`cluster_table`), and the plan's shared bytes are the kernel's
            // layout for this geometry (`cluster::plan`); x is (n_embd).
            unsafe { launch_in_clusters(s, &self.funcs[&plan.kernel], plan.launch_config(), &a, ov, CLUSTER_BLOCKS as u32) }.map_err(err)?;
            0
        } else {
            c.n_layer
        };
        for li in 0..looped_layers {
            let w = &args[li * 7..li * 7 + 7];
            let (wq, wk, wv, wg, wu) = (dev(&w[0])?, dev(&w[1])?, dev(&w[2])?, dev(&w[4])?, dev(&w[5])?);
            for (kind, first, rows) in qkv_parts(c, qkind, kd(&w[2])) {
                let (f, cfg) = qkv_launch(kind, rows)?;
                let mut a = KernelArgs::default();
                a.buf(&wq.data, s).buf(&wk.data, s).buf(&wv.data, s).int(wq.a_off).int(wk.a_off).int(wv.a_off).buf(&g.x, s);
                if let Some(xa) = pending {
                    a.buf(xa, s);
                }
                a.buf(&g.norms[li].0, s).float(eps).buf(&g.q, s).buf(&mirror.k[li], s).buf(&mirror.v[li], s);
                a.int(nh).int(nkv).int(hd).int(rot).int(neox).float(base).buf(&pos_ptr, s).int(d).int(first as i32).int(rows as i32);
                if self.skip.runs("qkv") {
                    unsafe { launch(s, f, cfg, &a, ov) }.map_err(err)?;
                }
            }
            let out_img = chain.attn.then_some(&g.img_att);
            let att = Attention { heads: Heads::of(c), q: &g.q, k: &mirror.k[li], v: &mirror.v[li], part: &g.part, out: &g.att, out_img, f16_guard: None, pos: &pos_ptr, rows: 1, splits: grid_splits, part_splits: g.splits, scale: c.attn_scale, window: 0, keys: 0 };
            if self.skip.runs("attn") {
                self.launch_attention(&att, ov)?;
            }
            if self.skip.runs("o") {
                if chain.attn {
                    self.launch_image_matvec(&w[3], map, &g.img_att, &g.x, pending)?;
                } else {
                    self.launch_matvec(&w[3], map, &g.att, &mut g.x, 1, MatvecHow { add: true, overlap: true, ..Default::default() })?;
                }
            }
            let mut a = KernelArgs::default();
            a.buf(&wg.data, s).buf(&wu.data, s).int(wg.a_off).int(wu.a_off);
            a.buf(&g.x, s).buf(&g.norms[li].1, s).float(eps);
            if let (Some((f, cfg, _)), Some(xa)) = (fused, pending) {
                let wd = map.get(&super::ffn::unit_major_key(w[6].key)).ok_or("unit-major down projection not resident")?;
                a.buf(&wd.data, s).int(wd.a_off).buf(xa, s).int(ff).int(d);
                if self.skip.runs("glu") {
                    // SAFETY: as gate_up_q8's launch, plus down's unit-major copy (n_embd x
                    // n_ff of gate's codec, `ffn_fuses`) and the pending part (n_embd + 1);
                    // the shared memory holds the block's image (`fused_ffn_launch`).
                    unsafe { launch(s, f, cfg, &a, ov) }.map_err(err)?;
                }
                continue;
            }
            if chain.glu {
                a.buf(&g.img_h, s);
            } else {
                a.buf(&g.h, s);
            }
            a.int(ff).int(d);
            if self.skip.runs("glu") {
                unsafe { launch(s, glu_f, glu_cfg, &a, ov) }.map_err(err)?;
            }
            if self.skip.runs("down") {
                if chain.glu {
                    self.launch_image_matvec(&w[6], map, &g.img_h, &g.x, None)?;
                } else {
                    self.launch_matvec(&w[6], map, &g.h, &mut g.x, 1, MatvecHow { add: true, overlap: true, ..Default::default() })?;
                }
            }
        }
        let head = MatvecHow { norm: Some((&g.out_norm, eps)), argmax: Some(&g.best), overlap: true, pending, ..Default::default() };
        self.launch_matvec(&args[args.len() - 2], map, &g.x, &mut g.logits, 1, head)
    }

    /// Queue a token's or a prompt chunk's first kernel: the embedding rows of `tokens`'
    /// (ids, rows) into x (rows, n_embd), scaled as the family scales them, the head's argmax
    /// key `best` zeroed, and the pending part where given (one row).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_embed(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, tokens: (&impl DevicePtr<i32>, usize), x: &CudaSlice<f32>, best: &CudaSlice<u64>, pending: Option<&CudaSlice<i64>>) -> Result<(), String> {
        let s = &self.stream;
        let embed = &args[args.len() - 1];
        let e = map.get(&embed.key).ok_or("weight not resident")?;
        let ekind = kind(embed.view.codec).expect("checked by unsupported()");
        let mut a = KernelArgs::default();
        a.buf(&e.data, s).int(ekind).int(e.a_off).buf(tokens.0, s).buf(x, s).int(m.cfg.n_embd as i32).buf(best, s);
        match pending {
            Some(xa) => a.buf(xa, s),
            None => a.null(),
        };
        a.float(m.cfg.embed_scale);
        let cfg = LaunchConfig { grid_dim: ((m.cfg.n_embd as u32).div_ceil(256), tokens.1 as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the tokens are in the vocabulary (the session checks them), x holds their
        // rows (the callers' buffers are sized for them), best is one key and the pending
        // part (n_embd + 1); the arguments follow embed_row's parameter list in graph.cu.
        unsafe { launch(s, &self.funcs["embed_row"], cfg, &a, false) }.map_err(err)
    }

    /// Queue out (rows, cols) f16 = x (rows, cols) RMS-normed with nw, guarded by `bad`.
    fn launch_norm_f16(&self, x: &CudaSlice<f32>, nw: &CudaSlice<f32>, eps: f32, (rows, cols): (usize, usize), out: &CudaSlice<u16>, bad: &CudaSlice<u32>) -> Result<(), String> {
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(x, s).buf(nw, s).float(eps).int(cols as i32).buf(out, s).buf(bad, s);
        // SAFETY: x and out hold rows x cols values, nw cols (the prefill buffers and f16
        // scratch are sized for the chunk's rows and the widest input).
        unsafe { launch(s, &self.funcs["rms_norm_f16"], LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }, &a, false) }.map_err(err)
    }

    /// Queue h (rows, ff) f16 = act(gate) * up from gu (rows, 2 ff), guarded by `bad`.
    fn launch_act_mul_f16(&self, gu: &CudaSlice<f32>, (rows, ff): (usize, usize), h: &CudaSlice<u16>, bad: &CudaSlice<u32>, act: Activation) -> Result<(), String> {
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(gu, s).int(ff as i32).buf(h, s).buf(bad, s).int(act_code(act));
        // SAFETY: gu holds rows x 2 ff floats and h rows x ff halves (the f16 scratch).
        unsafe { launch(s, &self.funcs["act_mul_f16"], LaunchConfig { grid_dim: (ff.div_ceil(256) as u32, rows as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }, &a, false) }.map_err(err)
    }

    /// The float-input gate/up kernel `name` (gate_up_silu, gate_up_gelu_tanh) for codec
    /// kind `gkind`: 2 or 4 rows a warp group (gate, up pairs), whichever balances the grid's
    /// warps.
    pub(super) fn glu_launch(&self, name: &str, gkind: i32, c: &LlamaConfig) -> Result<(&CudaFunction, LaunchConfig), String> {
        let glu_warps = self.row_launch(&super::row_kernel(name, gkind, 4), 2 * c.n_ff, 4, row_smem(gkind, c.n_embd), 1)?.1.grid_dim.0 as usize * (super::ROW_THREADS as usize / 32);
        let glu_r = super::balanced_rows_per_group(2 * c.n_ff, &[4, 2], glu_warps);
        self.row_launch(&super::row_kernel(name, gkind, glu_r), 2 * c.n_ff, glu_r, row_smem(gkind, c.n_embd), 1)
    }

    /// Queue y += x . W^T for weight `w` (a quantized codec), x given by its int8 image
    /// `img` (the token graph's int8 chain; matvec.cu's `matvec_img`), its blocks spread
    /// (`spread.rs`); the pending part (`ffn.rs`) folded into y and zeroed where given.
    fn launch_image_matvec(&self, w: &WeightArg, map: &HashMap<u64, Resident>, img: &CudaSlice<u8>, y: &CudaSlice<f32>, pending: Option<&CudaSlice<i64>>) -> Result<(), String> {
        let k = kind(w.view.codec).filter(|&k| super::int8_kind(k)).ok_or("the int8 chain takes quantized codecs only")?;
        let res = map.get(&w.key).ok_or("weight not resident")?;
        let (rows, cols) = (w.view.rows, w.view.cols);
        let r = super::matvec_rows_per_group(rows);
        let name = if pending.is_some() { "matvec_img_fold" } else { "matvec_img" };
        let (f, cfg) = self.spread_row_launch(&super::row_kernel(name, k, r), rows, r, row_smem(k, cols))?;
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(&res.data, s).int(res.a_off).buf(img, s).buf(y, s).int(rows as i32).int(cols as i32);
        // matvec_img_fold always adds (and folds xa in); matvec_img takes `add`.
        match pending {
            Some(xa) => a.buf(xa, s),
            None => a.int(1),
        };
        // SAFETY: the kernel reads the resident planar weight (rows x cols of its codec) and
        // the image of a cols-value row (`image_bytes(cols)`), and adds into rows floats of
        // y: the graph's buffers are allocated for exactly the model's widths.
        unsafe { launch(s, f, cfg, &a, self.overlap) }.map_err(err)
    }

    /// Queue the prefill graph for `rows` prompt rows (tokens in the prefill buffers, the first
    /// row's position in the mirror's params[1]): embedding rows; per layer QKV + norm + RoPE +
    /// mirror append, causal attention of every row over the mirror, O + residual, gate/up +
    /// norm + SiLU, down + residual, each over tiles of prompt rows (each weight unit read once
    /// per tile); then the head (final norm fused, argmax folded) for the last row only.
    /// `f16_paths`: whether the chunk may take the paths with f16 operands (cuBLAS, the
    /// tensor-core attention), which set `PrefillBuffers::f16_bad` (zeroed here) where a value
    /// is past f16's range; returns whether it took any.
    #[allow(clippy::too_many_arguments)]
    fn queue_prefill(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror, rows: usize, f16_paths: bool) -> Result<bool, String> {
        let c = &m.cfg;
        let s = &self.stream;
        let dev = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let kd = |w: &WeightArg| kind(w.view.codec).expect("checked by unsupported()");
        let (d, ff, n) = (c.n_embd as i32, c.n_ff as i32, rows as i32);
        let (nh, nkv, hd, rot) = (c.n_head as i32, c.n_head_kv as i32, c.head_dim as i32, c.rope_dims as i32);
        let (eps, base, neox) = (c.eps, c.rope_base, c.rope_neox as i32);
        let pos_ptr = mirror.params.slice(1..2);
        let capacity = mirror.k[0].len() / c.kv_dim().max(1);
        let (qkind, gkind) = (kd(&args[0]), kd(&args[4]));
        // Q/K/V and gate/up take the tensor-core GEMMs where the codec and the chunk allow
        // (64-row tiles, int8 input quantized once per op); otherwise the row kernels' tiles
        // of as many staged rows as fit beside the weight ring.
        let mma = |kind: i32| rows >= super::MMA_MIN_ROWS && super::mma_fits(kind, c.n_embd, self.smem_limit);
        let glu_mma = mma(gkind);
        let tile = |kind: i32| super::matmul_tile(kind, c.n_embd, self.smem_limit);
        let gnb = tile(gkind);
        let qkv_rows = c.q_dim() + 2 * c.kv_dim();
        // A Q/K/V part's launch: the GEMM, or the row kernels' tiles (and their tile size).
        let qkv_launch = |kind: i32, count: usize| -> Result<(&CudaFunction, LaunchConfig, Option<usize>), String> {
            if mma(kind) {
                Ok((&self.funcs[&format!("mma_qkv_rope_k{kind}")], self.mma_config(kind, count, rows), None))
            } else {
                let nb = tile(kind);
                let (f, cfg) = self.row_launch(&super::row_kernel("qkv_rope_tile", kind, 2), count, 2, super::tile_smem(kind, c.n_embd, nb), rows.div_ceil(nb))?;
                Ok((f, cfg, Some(nb)))
            }
        };
        let (glu_f, glu_cfg) = if glu_mma {
            (&self.funcs[&format!("mma_gate_up_silu_k{gkind}")], self.mma_config(gkind, 2 * c.n_ff, rows))
        } else {
            self.row_launch(&super::row_kernel("gate_up_silu_tile", gkind, 2), 2 * c.n_ff, 2, super::tile_smem(gkind, c.n_embd, gnb), rows.div_ceil(gnb))?
        };
        let pb = g.prefill.as_mut().expect("made by run_prefill");
        if rows > pb.rows {
            return Err(format!("{rows} prompt rows for prefill buffers of {}", pb.rows));
        }
        let ov = self.overlap;
        self.launch_embed(m, args, map, (&pb.tokens, rows), &pb.x, &g.best, None)?;
        // SAFETY (every launch below): the prefill buffers hold pb.rows >= rows rows of
        // the model's geometry (run_prefill checks rows; xq / xd are as wide as the widest
        // input); positions pos..pos + rows are within the mirror's capacity (the session
        // checks it before the call); staged tiles fit the shared memory asked for
        // (`matmul_tile`, `mma_fits`); the arguments follow the kernels' parameter lists in
        // graph.cu, matvec.cu and mma.cu.
        let quant = Some((&pb.xq, &pb.xd));
        if f16_paths {
            s.memset_zeros(&mut pb.f16_bad).map_err(err)?;
        }
        let bad = &pb.f16_bad;
        // cuBLAS where it loaded and the chunk would take the tensor-core GEMMs.
        let mut f16 = if f16_paths && rows >= super::MMA_MIN_ROWS { self.blas.as_ref().ok().zip(pb.f16.as_mut()) } else { None };
        let f16_ran = f16.is_some() || (f16_paths && self.prompt_flash(c.head_dim, rows, false).is_some());
        // The cuBLAS path's glue launches, 256 threads a block. SAFETY (these and every
        // launch below): x, q and att hold `rows` rows of the model's widths, the f16 scratch
        // the sizes `f16_scratch` names for pb.rows >= rows; the arguments follow the
        // parameter lists in graph.cu.
        let grid = |threads: usize, rows: usize| LaunchConfig { grid_dim: (threads.div_ceil(256) as u32, rows as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let norm_f16 = |x: &CudaSlice<f32>, nw: &CudaSlice<f32>, out: &CudaSlice<u16>| self.launch_norm_f16(x, nw, eps, (rows, c.n_embd), out, bad);
        for li in 0..c.n_layer {
            let w = &args[li * 7..li * 7 + 7];
            // Q, K, V (cuBLAS: one GEMM over the three decoded side by side), RoPE and the
            // mirror append.
            if self.skip.runs("qkv") {
                match f16.as_mut() {
                    Some((blas, f)) => {
                        norm_f16(&pb.x, &g.norms[li].0, &f.x)?;
                        let mut at = 0;
                        for wi in &w[..3] {
                            self.queue_dequant(wi, dev(wi)?, &f.w.slice(at..), bad)?;
                            at += wi.view.rows * wi.view.cols;
                        }
                        blas.gemm(s, &f.x, &f.w, &mut f.y, (rows, qkv_rows, c.n_embd), false)?;
                        let mut a = KernelArgs::default();
                        a.buf(&f.y, s).buf(&pb.q, s).buf(&mirror.k[li], s).buf(&mirror.v[li], s);
                        a.int(nh).int(nkv).int(hd).int(rot).int(neox).float(base).buf(&pos_ptr, s);
                        unsafe { launch(s, &self.funcs["rope_append_rows"], grid(qkv_rows / 2, rows), &a, false) }.map_err(err)?;
                    }
                    None => {
                        let (wq, wk, wv) = (dev(&w[0])?, dev(&w[1])?, dev(&w[2])?);
                        let mut quantized = false;
                        for (kind, first, count) in qkv_parts(c, qkind, kd(&w[2])) {
                            let (f, cfg, nb) = qkv_launch(kind, count)?;
                            let mut a = KernelArgs::default();
                            a.buf(&wq.data, s).buf(&wk.data, s).buf(&wv.data, s).int(wq.a_off).int(wk.a_off).int(wv.a_off);
                            // The two kernels differ in their input (int8 rows, quantized once a
                            // layer, or f32 rows normed while staged) and the tile kernel's tile size.
                            if nb.is_none() {
                                if !quantized {
                                    self.launch_quantize(&pb.x, Some((&g.norms[li].0, eps)), c.n_embd, rows, (&pb.xq, &pb.xd), true)?;
                                    quantized = true;
                                }
                                a.buf(&pb.xq, s).buf(&pb.xd, s);
                            } else {
                                a.buf(&pb.x, s).buf(&g.norms[li].0, s).float(eps);
                            }
                            a.buf(&pb.q, s).buf(&mirror.k[li], s).buf(&mirror.v[li], s);
                            a.int(nh).int(nkv).int(hd).int(rot).int(neox).float(base).buf(&pos_ptr, s).int(d).int(n);
                            if let Some(nb) = nb {
                                a.int(nb as i32);
                            }
                            a.int(first as i32).int(count as i32);
                            unsafe { launch(s, f, cfg, &a, ov) }.map_err(err)?;
                        }
                    }
                }
            }
            if self.skip.runs("attn") {
                let att = Attention { heads: Heads::of(c), q: &pb.q, k: &mirror.k[li], v: &mirror.v[li], part: &pb.part, out: &pb.att, out_img: None, f16_guard: f16_paths.then_some(bad), pos: &pos_ptr, rows, splits: capacity.div_ceil(ATT_CHUNK), part_splits: pb.part_splits, scale: c.attn_scale, window: 0, keys: mirror.len + rows };
                self.launch_attention(&att, ov)?;
            }
            // O, added into the residual stream.
            if self.skip.runs("o") {
                match f16.as_mut() {
                    Some((blas, f)) => {
                        self.queue_to_f16(&pb.att, &f.x, rows * c.q_dim(), bad)?;
                        self.queue_dequant(&w[3], dev(&w[3])?, &f.w, bad)?;
                        blas.gemm(s, &f.x, &f.w, &mut pb.x, (rows, c.n_embd, c.q_dim()), true)?;
                    }
                    None => self.launch_matvec(&w[3], map, &pb.att, &mut pb.x, rows, MatvecHow { add: true, overlap: true, quant, ..Default::default() })?,
                }
            }
            // Gate and up (cuBLAS: one GEMM over both decoded side by side).
            if self.skip.runs("glu") {
                match f16.as_mut() {
                    Some((blas, f)) => {
                        norm_f16(&pb.x, &g.norms[li].1, &f.x)?;
                        self.queue_dequant(&w[4], dev(&w[4])?, &f.w, bad)?;
                        self.queue_dequant(&w[5], dev(&w[5])?, &f.w.slice(c.n_ff * c.n_embd..), bad)?;
                        blas.gemm(s, &f.x, &f.w, &mut f.y, (rows, 2 * c.n_ff, c.n_embd), false)?;
                    }
                    None => {
                        let (wg, wu) = (dev(&w[4])?, dev(&w[5])?);
                        let mut a = KernelArgs::default();
                        a.buf(&wg.data, s).buf(&wu.data, s).int(wg.a_off).int(wu.a_off);
                        if glu_mma {
                            self.launch_quantize(&pb.x, Some((&g.norms[li].1, eps)), c.n_embd, rows, (&pb.xq, &pb.xd), true)?;
                            a.buf(&pb.xq, s).buf(&pb.xd, s);
                        } else {
                            a.buf(&pb.x, s).buf(&g.norms[li].1, s).float(eps);
                        }
                        a.buf(&pb.h, s).int(ff).int(d).int(n);
                        if !glu_mma {
                            a.int(gnb as i32);
                        }
                        unsafe { launch(s, glu_f, glu_cfg, &a, ov) }.map_err(err)?;
                    }
                }
            }
            // Down (cuBLAS: SiLU(gate) * up into f16 first), added into the residual stream.
            if self.skip.runs("down") {
                match f16.as_mut() {
                    Some((blas, f)) => {
                        self.launch_act_mul_f16(&f.y, (rows, c.n_ff), &f.x, bad, Activation::Silu)?;
                        self.queue_dequant(&w[6], dev(&w[6])?, &f.w, bad)?;
                        blas.gemm(s, &f.x, &f.w, &mut pb.x, (rows, c.n_embd, c.n_ff), true)?;
                    }
                    None => self.launch_matvec(&w[6], map, &pb.h, &mut pb.x, rows, MatvecHow { add: true, overlap: true, quant, ..Default::default() })?,
                }
            }
        }
        let last = pb.x.slice((rows - 1) * c.n_embd..rows * c.n_embd);
        let head = MatvecHow { norm: Some((&g.out_norm, eps)), argmax: Some(&g.best), overlap: true, ..Default::default() };
        self.launch_matvec(&args[args.len() - 2], map, &last, &mut g.logits, 1, head)?;
        Ok(f16_ran)
    }

    /// Mirror rows from..to of `seq` into the host cache layout.
    pub(super) fn pull_rows(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        let mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        let mirror = mirrors.get(&seq).ok_or("no KV mirror for this sequence")?;
        if to > mirror.len {
            return Err(format!("the mirror holds {} rows, {to} were asked for", mirror.len));
        }
        let d = host.kv_dim();
        for l in 0..host.n_layer() {
            let k = self.stream.clone_dtoh(&mirror.k[l].slice(from * d..to * d)).map_err(err)?;
            let v = self.stream.clone_dtoh(&mirror.v[l].slice(from * d..to * d)).map_err(err)?;
            host.write_f16(l, from, bytemuck::cast_slice(&k), bytemuck::cast_slice(&v));
        }
        host.set_len(to);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{attention_split_kernel, kind, CODEC_REFUSED, merge_threads, qkv_parts, unsupported, GraphReadback, ATTENTION_SPLIT, ATTENTION_WINDOW_SPLIT, MAX_HEAD_DIM};
    use crate::gpu::cuda::row_smem;
    use crate::model::llama::Llama;
    use std::sync::Arc;

    /// The device picks the next token for greedy reads and for top-k reads that carry the
    /// sampler's draw spec (with the draw for this token or the one after), never for logits.
    #[test]
    fn the_device_picks_the_next_token_for_greedy_and_drawn_reads_only() {
        use super::{NextPick, TokenRead};
        let spec = crate::sample::DrawSpec { temperature: 0.8, min_p: 0.05, top_p: 0.95, draws: [0.25, 0.75] };
        assert_eq!(TokenRead::Argmax.next_pick(None, 1), Some(NextPick::Argmax));
        assert_eq!(TokenRead::TopK(40).next_pick(Some(spec), 0), Some(NextPick::Draw { spec, u: 0.25 }));
        assert_eq!(TokenRead::TopK(40).next_pick(Some(spec), 1), Some(NextPick::Draw { spec, u: 0.75 }));
        assert_eq!(TokenRead::TopK(40).next_pick(None, 0), None);
        assert_eq!(TokenRead::Logits.next_pick(Some(spec), 0), None);
        let (mut logits, mut best, mut cand) = (vec![0f32; 4], 0u32, Vec::new());
        assert_eq!(TokenRead::of(&GraphReadback::Logits(&mut logits)), TokenRead::Logits);
        assert_eq!(TokenRead::of(&GraphReadback::Argmax(&mut best)), TokenRead::Argmax);
        assert_eq!(TokenRead::of(&GraphReadback::TopK(40, Some(spec), &mut cand)), TokenRead::TopK(40));
        // Past the device's k the logits come back and the host picks.
        assert_eq!(TokenRead::of(&GraphReadback::TopK(1000, Some(spec), &mut cand)), TokenRead::Logits);
    }

    #[test]
    fn prompt_attention_splits_keys_only_where_few_tiles_leave_sms_idle() {
        use super::flash_span;
        // Gemma 3 270M's pp512 from position 0 on an H100's 132 SMs: 4 heads x 8 tiles.
        assert_eq!(flash_span(4, 8, 512, 132, 8), 128);
        // Longer contexts: at most `slots` pieces of whole 32-key chunks.
        assert_eq!(flash_span(4, 8, 1000, 132, 8), 128);
        assert_eq!(flash_span(4, 8, 2000, 132, 8), 256);
        assert_eq!(flash_span(4, 8, 4096, 132, 8), 512);
        // Tiles filling half the SMs (llama-1b's 32 heads x 8 tiles), no room for partials,
        // keys within one piece: unsplit.
        assert_eq!(flash_span(32, 8, 512, 132, 8), 0);
        assert_eq!(flash_span(33, 2, 512, 132, 8), 0);
        assert_eq!(flash_span(4, 8, 512, 132, 1), 0);
        assert_eq!(flash_span(4, 2, 128, 132, 8), 0);
        for keys in 1..5000 {
            for slots in 0..12 {
                let span = flash_span(2, 1, keys, 132, slots);
                assert!(span == 0 || (span.is_multiple_of(32) && span >= 128 && span < keys && keys.div_ceil(span) <= slots), "{keys} keys, {slots} slots: span {span}");
            }
        }
    }

    #[test]
    fn the_long_prompt_row_cap_takes_16_to_4096_rows() {
        assert_eq!(super::long_prefill_rows(None), Ok(super::LONG_PREFILL_ROWS));
        assert_eq!(super::long_prefill_rows(Some(" 256 ")), Ok(256));
        for bad in ["8", "4097", "many"] {
            assert!(super::long_prefill_rows(Some(bad)).unwrap_err().contains("CMF_CUDA_PREFILL_ROWS"), "{bad}");
        }
    }

    /// Every head size the graph takes (multiples of 16 up to MAX_HEAD_DIM) gets the smallest
    /// split attention kernel whose registers hold it, windowed or not.
    #[test]
    fn every_head_size_gets_the_smallest_split_kernel_that_holds_it() {
        for (windowed, kernels) in [(false, &ATTENTION_SPLIT), (true, &ATTENTION_WINDOW_SPLIT)] {
            for hd in (16..=MAX_HEAD_DIM).step_by(16) {
                let name = attention_split_kernel(hd, windowed);
                let (cap, _) = kernels.iter().find(|(_, n)| *n == name).expect("a listed kernel");
                assert!(hd <= *cap, "head size {hd} got {name}");
                assert!(kernels.iter().all(|(c, _)| *c >= *cap || *c < hd), "head size {hd}: a smaller kernel than {name} holds it");
            }
        }
    }

    /// A synthesized `tiny` llama (hidden 256, head size 64) in `codec`.
    fn tiny(codec: &str) -> Arc<Llama> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny.gguf");
        crate::synth::synth("tiny", codec, &path, 3).unwrap();
        crate::generate::Engine::load(&path).unwrap().model
    }

    #[test]
    fn the_graph_takes_a_plain_llama_and_names_what_it_cannot_take() {
        let m = tiny("q4_0");
        let ample = row_smem(0, 512) + 1024;
        assert_eq!(unsupported(&m, 2048, ample), None);
        // The staged row and weight ring of the widest input (the FFN's 512) must fit.
        assert!(unsupported(&m, 2048, row_smem(0, 512) - 1).is_some_and(|why| why.contains("width")));
        // A context whose mirror offsets would overflow the kernels' i32 arithmetic.
        assert!(unsupported(&m, i32::MAX as usize, ample).is_some_and(|why| why.contains("context")));
        // Q4_K (kind 6), Q4_K_M's and Q5_K_M's mixes (Q6_K V in some layers: Q/K and V
        // launched apart) run as graphs where their larger rings (records of 1 to 3 words a
        // unit) fit; a codec without a kernel declines instead of running part of it.
        use super::super::layout::{KIND_Q4K, KIND_Q5K, KIND_Q6};
        assert_eq!(unsupported(&tiny("q4_k"), 2048, row_smem(KIND_Q4K, 512) + 1024), None);
        assert!(unsupported(&tiny("q4_k"), 2048, row_smem(KIND_Q4K, 512) - 1).is_some_and(|why| why.contains("width")));
        let mixed = tiny("q4_k_m");
        assert!(mixed.layers.iter().any(|l| kind(l.wv.codec) != kind(l.wq.codec)), "the mix puts V in Q6_K somewhere");
        assert_eq!(unsupported(&mixed, 2048, row_smem(KIND_Q4K, 512).max(row_smem(KIND_Q6, 512)) + 1024), None);
        let q5 = row_smem(KIND_Q5K, 512).max(row_smem(KIND_Q6, 512));
        assert_eq!(unsupported(&tiny("q5_k_m"), 2048, q5 + 1024), None);
        assert!(unsupported(&tiny("q5_k_m"), 2048, row_smem(KIND_Q5K, 512) - 1).is_some_and(|why| why.contains("width")));
        assert!(unsupported(&tiny("q2_k"), 2048, ample).is_some_and(|why| why.contains("codec") && crate::gpu::refuses_model(why)));
    }

    /// Gemma 3 takes the token graph (its own layer, `gemma.rs`) where its layers carry every
    /// norm and its FFN is tanh-GELU's; exact GELU (no gate/up kernel of its own) is refused.
    #[test]
    fn the_graph_takes_gemma3_with_its_norms_and_tanh_gelu_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gemma.gguf");
        crate::synth::synth("gemma3-270m", "q4_0", &path, 3).unwrap();
        let m = crate::generate::Engine::load(&path).unwrap().model;
        let smem = row_smem(0, m.cfg.n_ff) + 1024;
        assert_eq!(unsupported(&m, 4096, smem), None);
        let mut exact = Llama::load(Arc::clone(&m.file)).unwrap();
        exact.cfg.act = crate::gpu::backend::Activation::GeluExact;
        assert!(unsupported(&exact, 4096, smem).is_some_and(|why| why.contains("GELU") && crate::gpu::refuses_model(why)));
        let mut bare = Llama::load(Arc::clone(&m.file)).unwrap();
        bare.layers[3].post_ffn_norm = None;
        assert!(unsupported(&bare, 4096, smem).is_some_and(|why| why.contains("norms")));
    }

    #[test]
    fn the_codec_refusal_names_exactly_the_codecs_without_a_kernel() {
        let named: Vec<&str> = CODEC_REFUSED.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
        for codec in cortiq_core::codec::ALL_CODECS {
            assert_eq!(named.contains(&codec.name()), kind(codec).is_none(), "{codec}: the refusal's list and kind() disagree");
        }
    }

    #[test]
    fn q_k_and_v_launch_apart_only_where_v_has_another_kind() {
        let c = tiny("q4_0").cfg.clone();
        let (qk, kv) = (c.q_dim() + c.kv_dim(), c.kv_dim());
        assert_eq!(qkv_parts(&c, 1, 1), vec![(1, 0, qk + kv)]);
        assert_eq!(qkv_parts(&c, 1, super::super::layout::KIND_Q6), vec![(1, 0, qk), (5, qk, kv)]);
        // Parts start on a rotary pair.
        assert!(qk % 2 == 0);
    }

    #[test]
    fn prefill_tiles_stage_as_many_rows_as_fit_beside_the_ring() {
        use super::super::matmul_tile;
        // The H200's opt-in block limit (227 KiB) less the static reserve.
        let h200 = 227 * 1024 - 512;
        // llama-8b: 4096 columns stage 5632 bytes a row, 8 of them beside the 40 KiB q4 ring;
        // so do the down projection's 14336 columns (19712 bytes a row: 194 KiB in all).
        assert_eq!(matmul_tile(0, 4096, h200), 8);
        assert_eq!(matmul_tile(0, 14336, h200), 8);
        // q8_0's ring is 72 KiB, which leaves room for 8 (226 of 226.5 KiB); f32 rows stage
        // 4 bytes a value (4 rows would take 224 KiB beside a 32 KiB ring).
        assert_eq!(matmul_tile(2, 14336, h200), 8);
        assert_eq!(matmul_tile(4, 14336, h200), 2);
        assert_eq!(matmul_tile(4, 12288, h200), 4);
        // Nothing but one row fits: one row per tile (the caller checked that one fits).
        assert_eq!(matmul_tile(0, 4096, row_smem(0, 4096)), 1);
    }

    /// A merge block holds whole groups of head_dim rounded up to a warp, as many as fit 256
    /// threads, at most 8 (the kernel's shared arrays) and at least one.
    #[test]
    fn merge_blocks_hold_whole_groups_of_a_head() {
        for hd in (16..=MAX_HEAD_DIM).step_by(16) {
            let (t, dims) = (merge_threads(hd) as usize, hd.next_multiple_of(32));
            assert!(t.is_multiple_of(dims) && t <= 256 && (1..=8).contains(&(t / dims)) && t + dims > 256, "head {hd}: {t} threads");
        }
        assert_eq!((merge_threads(64), merge_threads(128), merge_threads(80), merge_threads(256)), (256, 256, 192, 256));
    }

    #[test]
    fn rows_per_group_follow_the_busiest_warp() {
        use super::super::balanced_rows_per_group as pick;
        // llama-8b gate/up (2 x 14336 rows) over 2112 warps: groups of 4 leave the busiest
        // warp 16 rows against an average of 13.6; groups of 2 give it 14.
        assert_eq!(pick(2 * 14336, &[4, 2], 2112), 2);
        // llama-1b (2 x 8192): 8 rows either way, so the larger groups.
        assert_eq!(pick(2 * 8192, &[4, 2], 2112), 4);
        // An 8b head (128256 rows): 64 rows at 4 against 61 at 1 is within 10 %.
        assert_eq!(pick(128256, &[4, 2, 1], 2112), 4);
        // More warps than groups (smollm2's 2 x 1536): smaller groups spread wider.
        assert_eq!(pick(2 * 1536, &[4, 2], 2112), 2);
        // One warp: the same rows either way, so the larger groups.
        assert_eq!(pick(8, &[4, 2], 0), 4);
    }

    #[test]
    fn the_weight_ring_holds_eight_units_a_thread() {
        // Planar Q4_0 unit: 16 payload bytes + a scale word, 8 per thread; Q8_0: 32 + 4, 8.
        assert_eq!(row_smem(0, 2048), (2048 + 12 * 64) + 256 * 8 * 20);
        assert_eq!(row_smem(2, 2048), (2048 + 12 * 64) + 256 * 8 * 36);
        // Float kinds stage f32 x and carry no scale words.
        assert_eq!(row_smem(3, 2048), 4 * 2048 + 256 * 8 * 16);
    }
}
