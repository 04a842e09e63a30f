//! What a GPU backend implements: a capability record and one method per job kind, each
//! defaulting to a decline. Job descriptors are defined here, once; backends implement them,
//! they never redefine them.

use crate::cpu::matmul::WeightView;
use crate::kv::KvCache;
use crate::model::Llama;
use half::f16;

/// What a device is and can do (plain data, as ggml-backend's device caps).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// `wgpu`, `cuda`, `metal` (or `scripted` in tests).
    pub backend: &'static str,
    pub name: String,
    /// A discrete card (PCIe VRAM) rather than unified memory.
    pub discrete: bool,
    /// Device memory in bytes; `u64::MAX` for unified memory.
    pub memory_bytes: u64,
    pub f16: bool,
    pub subgroups: bool,
    /// Prompt GEMMs and prompt attention run on matrix-multiply units (tensor cores):
    /// wgpu's cooperative matrices (`gemm_coop.wgsl`, `attn_coop.wgsl`), CUDA's mma kernels.
    pub matrix_units: bool,
    pub max_binding_bytes: u64,
    /// Quantized weights (Q4_0, Q4_1, Q8_0; on CUDA also Q4_K, Q5_K, Q6_K and Q5_0) are dotted with activations quantized to int8
    /// per 32 values by the CPU path's q8 rule (`cpu::quant`), not with f32 activations.
    pub q8_activations: bool,
    /// Batch-1 matmuls (`matmul`, `matmul_many`) of those codecs dot int8 activations (the
    /// same rule), whatever `q8_activations` says of the other jobs.
    pub q8_matvec: bool,
}

/// A weight matrix handed to a backend: a residency key (stable per loaded tensor) and the
/// host bytes, which the backend uploads once and keeps.
#[derive(Clone, Copy)]
pub struct WeightArg<'a> {
    pub key: u64,
    pub view: WeightView<'a>,
}

/// y (batch, rows) = x (batch, cols) . W^T.
pub struct MatmulJob<'a> {
    pub w: WeightArg<'a>,
    /// (batch, cols)
    pub x: &'a [f32],
    pub batch: usize,
}

/// Several matrices applied to one input in one submission (QKV).
pub struct MultiMatmulJob<'a> {
    pub ws: Vec<WeightArg<'a>>,
    /// (batch, cols)
    pub x: &'a [f32],
    pub batch: usize,
}

/// The activation of a dense FFN. A backend without it declines; it never substitutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Silu,
    GeluExact,
    GeluTanh,
}

/// down(act(gate(x)) * up(x)) in one submission.
pub struct FfnJob<'a> {
    pub gate: WeightArg<'a>,
    pub up: WeightArg<'a>,
    pub down: WeightArg<'a>,
    pub act: Activation,
    /// (batch, n_embd)
    pub x: &'a [f32],
    pub batch: usize,
}

/// Chunked causal attention of `batch` queries at positions pos0.. against cached K/V.
pub struct AttentionJob<'a> {
    /// (batch, n_head * head_dim)
    pub q: &'a [f32],
    /// (pos0 + batch, n_head_kv * head_dim)
    pub keys: &'a [f16],
    pub values: &'a [f16],
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub pos0: usize,
    pub batch: usize,
    /// Sliding window in positions, if any.
    pub window: Option<usize>,
}

/// C (m, n) = A (m, k) . B (n, k)^T in f32.
pub struct GemmNtJob<'a> {
    pub a: &'a [f32],
    pub b: &'a [f32],
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// How MoE router scores are turned into weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterScoring {
    Softmax,
    Sigmoid,
}

/// A whole MoE layer: router, top-k, the selected experts, optional shared expert.
pub struct MoeJob<'a> {
    pub router: WeightArg<'a>,
    pub experts: Vec<(WeightArg<'a>, WeightArg<'a>, WeightArg<'a>)>,
    pub shared: Option<(WeightArg<'a>, WeightArg<'a>, WeightArg<'a>)>,
    pub top_k: usize,
    pub scoring: RouterScoring,
    pub renormalize: bool,
    pub act: Activation,
    /// (batch, n_embd)
    pub x: &'a [f32],
    pub batch: usize,
}

/// One decode token through the whole layer stack (SPEC section 8).
pub struct TokenGraphJob<'a> {
    pub model: &'a Llama,
    /// The sequence whose device KV mirror this token extends.
    pub seq: u64,
    pub token: u32,
    /// Position of the token; the mirror must hold exactly `pos` rows (seeded from
    /// `host_kv` when it does not: a zero state is never assumed).
    pub pos: usize,
    pub host_kv: &'a KvCache,
    /// How many leading layers run: all of them (the whole token, through the head), or a
    /// device prefix (`Backend::graph_layers`) whose residual stream comes back
    /// (`GraphReadback::Hidden`) for the host to run the rest.
    pub layers: usize,
}

/// Prompt positions `pos..pos + tokens.len()` of one sequence through the whole stack in one
/// submission (SPEC section 9): the KV mirror gains those rows; the last position's logits
/// (or their argmax) come back.
pub struct PrefillGraphJob<'a> {
    pub model: &'a Llama,
    pub seq: u64,
    pub tokens: &'a [u32],
    /// Position of the first token; the mirror must hold exactly `pos` rows (seeded from
    /// `host_kv` when it does not).
    pub pos: usize,
    pub host_kv: &'a KvCache,
    /// Leading layers that run, as for `TokenGraphJob`: a device prefix reads back every
    /// row's residual stream (tokens.len(), n_embd).
    pub layers: usize,
}

/// What a graph reads back: the logits (vocab), only their argmax (greedy sampling,
/// `sample::argmax`'s rule), the sampler's k candidates (`TopK(k, draw, _)`: the k largest
/// finite logits as `sample::top_candidates` gives them, picked on the device where the
/// backend can, else from the logits read back; with `draw`, a backend may also draw the
/// next token from them on the device as the sampler will and queue it behind this one), or
/// after a device prefix the residual stream (rows, n_embd). Written only when the call
/// completes.
pub enum GraphReadback<'a> {
    Logits(&'a mut [f32]),
    Argmax(&'a mut u32),
    TopK(usize, Option<crate::sample::DrawSpec>, &'a mut Vec<(u32, f32)>),
    Hidden(&'a mut [f32]),
}

/// A token graph's readback as it arrives from the device (only wgpu runs device prefixes,
/// so only it reads hidden states back).
#[cfg(any(test, feature = "gpu", feature = "cuda"))]
pub(crate) enum GraphRead {
    Logits(Vec<f32>),
    Argmax(u32),
    #[cfg(any(feature = "gpu", feature = "cuda"))]
    TopK(Vec<(u32, f32)>),
    #[cfg(any(test, feature = "gpu"))]
    Hidden(Vec<f32>),
}

impl GraphReadback<'_> {
    /// Whether the logits themselves must come back (for `TopK`, where the backend does not
    /// pick the candidates itself: `fill` picks them from the logits).
    #[cfg(any(test, feature = "cuda"))]
    pub(crate) fn wants_logits(&self) -> bool {
        matches!(self, GraphReadback::Logits(_) | GraphReadback::TopK(..))
    }

    /// The k of a `TopK` readback that a device picks itself (1..=DEVICE_TOP_K_MAX); None
    /// for anything else (a larger k reads the logits back, and `fill` picks).
    #[cfg(any(feature = "gpu", feature = "cuda"))]
    pub(crate) fn device_top_k(&self) -> Option<usize> {
        match self {
            GraphReadback::TopK(k, ..) if (1..=crate::gpu::candidates::DEVICE_TOP_K_MAX).contains(k) => Some(*k),
            _ => None,
        }
    }

    /// The draw spec of a `TopK` readback whose candidates a device picks (`device_top_k`).
    #[cfg(any(feature = "gpu", feature = "cuda"))]
    pub(crate) fn device_draw(&self) -> Option<crate::sample::DrawSpec> {
        match self {
            GraphReadback::TopK(_, draw, _) if self.device_top_k().is_some() => *draw,
            _ => None,
        }
    }

    /// Write what arrived (of the kind asked for) to the caller's slot.
    #[cfg(any(test, feature = "gpu", feature = "cuda"))]
    pub(crate) fn fill(self, read: GraphRead) {
        match (self, read) {
            (GraphReadback::Logits(l), GraphRead::Logits(v)) => l.copy_from_slice(&v),
            (GraphReadback::Argmax(b), GraphRead::Argmax(i)) => *b = i,
            (GraphReadback::TopK(k, _, c), GraphRead::Logits(v)) => *c = crate::sample::top_candidates(&v, k),
            #[cfg(any(feature = "gpu", feature = "cuda"))]
            (GraphReadback::TopK(_, _, c), GraphRead::TopK(v)) => *c = v,
            #[cfg(any(test, feature = "gpu"))]
            (GraphReadback::Hidden(h), GraphRead::Hidden(v)) => h.copy_from_slice(&v),
            _ => unreachable!("a backend reads back what was asked for"),
        }
    }
}

/// Where the token graph's time went, summed over `tokens` tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphProfile {
    pub tokens: u64,
    /// Of those, tokens the device already ran, queued behind the token before them on its
    /// own pick (the argmax, or a sampled token drawn on the device); and tokens so queued
    /// that the host then replaced with another.
    pub tokens_ahead: u64,
    pub ahead_dropped: u64,
    /// Host work before the submission.
    pub host: std::time::Duration,
    /// Submission to readback.
    pub tail: std::time::Duration,
    /// The token's compute pass on the GPU, from timestamp queries (where measured).
    pub gpu_pass: Option<std::time::Duration>,
    /// GPU time by kind of dispatch, from timestamps between dispatches
    /// (`CMF_GRAPH_HOSTPROF=2`, where the adapter can write them inside a pass).
    pub kernels: std::collections::BTreeMap<&'static str, std::time::Duration>,
    /// Weight bytes one token reads in each kind of dispatch that streams weights (the
    /// model's own encoding, as `weight bytes/token` in the bench table).
    pub stage_bytes: std::collections::BTreeMap<&'static str, u64>,
    /// Where the last recorded token graph fell back from a faster form, and why, or which
    /// form it took where there are several (each a line of `--explain`).
    pub graph_notes: Vec<String>,
    /// Prefill-graph chunks and their prompt rows.
    pub prefill_chunks: u64,
    pub prefill_rows: u64,
    /// Per chunk, summed: the sequence's device state made ready (mirror found, reused or
    /// allocated and seeded), the launches queued, and the wait from there to the readback.
    pub prefill_setup: std::time::Duration,
    pub prefill_host: std::time::Duration,
    pub prefill_tail: std::time::Duration,
    /// Prefill-chunk GPU time by kind of dispatch, summed over the chunks
    /// (`CMF_GRAPH_HOSTPROF=2`, where measured).
    pub prefill_kernels: std::collections::BTreeMap<&'static str, std::time::Duration>,
    /// Prefill chunks run a second time without f16 operands: a value past f16's range
    /// reached one (SPEC section 6's guard).
    pub prefill_f16_reruns: u64,
    /// Token-graph captures invalidated by other work on the device (then tried again), and
    /// tokens whose captures all failed (their launches queued uncaptured).
    pub captures_invalidated: u64,
    pub tokens_uncaptured: u64,
}

impl GraphProfile {
    /// The `--explain` line of the prefill-graph split, per chunk (empty without chunks).
    pub fn prefill_line(&self) -> String {
        if self.prefill_chunks == 0 {
            return String::new();
        }
        let per = |d: std::time::Duration| d.as_secs_f64() * 1e3 / self.prefill_chunks as f64;
        let mut out = format!("prefill graph, per chunk over {} chunks ({} rows): device state {:.2} ms, launches queued {:.2} ms, then GPU tail {:.2} ms (to the readback)\n", self.prefill_chunks, self.prefill_rows, per(self.prefill_setup), per(self.prefill_host), per(self.prefill_tail));
        if self.prefill_f16_reruns > 0 {
            out.push_str(&format!("  {} chunks rerun without f16 operands: a value past f16's range (the f16 operand guard)\n", self.prefill_f16_reruns));
        }
        for (kind, d) in &self.prefill_kernels {
            out.push_str(&format!("  GPU time per prefill chunk, {kind}: {:.2} ms\n", per(*d)));
        }
        out
    }

    /// The `--explain` lines of the token graph's fallbacks (empty without any).
    pub fn note_lines(&self) -> String {
        let mut out: String = self.graph_notes.iter().map(|n| format!("token graph: {n}\n")).collect();
        if self.captures_invalidated > 0 {
            out.push_str(&format!("token graph: {} captures invalidated by other work on the device and tried again; {} tokens ran uncaptured\n", self.captures_invalidated, self.tokens_uncaptured));
        }
        out
    }

    /// The per-kind lines of the `--explain` table: GPU time per token and, for kinds that
    /// stream weights, their bytes per token and the read rate that implies.
    pub fn kernel_lines(&self) -> String {
        let mut out = String::new();
        if self.tokens == 0 {
            return out;
        }
        for (kind, d) in &self.kernels {
            let us = d.as_secs_f64() * 1e6 / self.tokens as f64;
            let weights = match self.stage_bytes.get(kind) {
                Some(&b) if us > 0.0 => format!(", weights {:.1} MB ({:.0} GB/s)", b as f64 / 1e6, b as f64 / (us * 1e3)),
                _ => String::new(),
            };
            out.push_str(&format!("  GPU time per token, {kind}: {us:.1} us{weights}\n"));
        }
        out
    }
}

/// What a backend did with a job.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceOutcome {
    /// The whole job ran. `cold`: it paid a one-off cost (upload, buffer, pipeline build)
    /// and its time is not steady state.
    Completed { cold: bool },
    /// Nothing observable changed; the caller runs the CPU twin.
    Declined(&'static str),
    /// The device failed after admitting persistent state (a KV mirror): the caller must
    /// reset that sequence.
    Failed(String),
}

/// One backend context (one per adapter). Every method declines unless implemented.
pub trait Backend: Send + Sync {
    fn info(&self) -> DeviceInfo;

    /// Whether this weight is already in device memory.
    fn is_resident(&self, _key: u64) -> bool {
        false
    }

    fn matmul(&self, _job: &MatmulJob, _out: &mut [f32]) -> DeviceOutcome {
        DeviceOutcome::Declined("matmul not implemented")
    }

    /// `outs[i]` is (batch, ws[i].rows).
    fn matmul_many(&self, _job: &MultiMatmulJob, _outs: &mut [&mut [f32]]) -> DeviceOutcome {
        DeviceOutcome::Declined("multi-matmul not implemented")
    }

    /// `out` is (batch, n_embd).
    fn ffn(&self, _job: &FfnJob, _out: &mut [f32]) -> DeviceOutcome {
        DeviceOutcome::Declined("ffn not implemented")
    }

    fn attention(&self, _job: &AttentionJob, _out: &mut [f32]) -> DeviceOutcome {
        DeviceOutcome::Declined("attention not implemented")
    }

    fn gemm_nt(&self, _job: &GemmNtJob, _out: &mut [f32]) -> DeviceOutcome {
        DeviceOutcome::Declined("gemm-nt not implemented")
    }

    fn moe(&self, _job: &MoeJob, _out: &mut [f32]) -> DeviceOutcome {
        DeviceOutcome::Declined("moe not implemented")
    }

    /// One decode token through the whole-token graph; `out`: the logits (vocab), or only
    /// their argmax (`sample::argmax`'s rule: largest, first on ties, NaN never chosen); for
    /// a device prefix (`job.layers` below the model's), the residual stream after it.
    fn token_graph(&self, _job: &TokenGraphJob, _out: GraphReadback) -> DeviceOutcome {
        DeviceOutcome::Declined("token graph not implemented")
    }

    /// How many leading layers of `model` the token graph runs: all of them when the model
    /// fits (the default: a backend without a device prefix tries the whole token), fewer
    /// where only a prefix fits the weight budget, 0 where not even one layer does.
    fn graph_layers(&self, model: &Llama) -> usize {
        model.layers.len()
    }

    /// A prompt chunk through the batched prefill graph; `out` is the last position's
    /// logits or argmax, or for a device prefix (`job.layers` below the model's) every
    /// row's residual stream after it.
    fn prefill_graph(&self, _job: &PrefillGraphJob, _out: GraphReadback) -> DeviceOutcome {
        DeviceOutcome::Declined("prefill graph not implemented")
    }

    /// Most prompt rows one `prefill_graph` call takes for `model`; the session cuts prompts
    /// into chunks of this many rows where they run as prefill graphs.
    fn prefill_rows(&self, _model: &Llama) -> usize {
        crate::pipeline::PREFILL_CHUNK
    }

    /// Copy mirror rows `from..to` of `seq` into the host cache layout.
    fn pull_kv(&self, _seq: u64, _from: usize, _to: usize, _host: &mut KvCache) -> Result<(), String> {
        Err("no KV mirror".into())
    }

    /// Drop a sequence's device state (KV mirror, recurrent state).
    fn reset_sequence(&self, _seq: u64) {}

    /// Host-to-device copy bandwidth in bytes/s, measured once (None: not measured).
    fn upload_bandwidth(&self) -> Option<f64> {
        None
    }

    /// Token-graph time split for `CMF_GRAPH_HOSTPROF=1`.
    fn graph_profile(&self) -> Option<GraphProfile> {
        None
    }

    /// Bytes of weights this backend keeps resident at most (`u64::MAX`: unified memory).
    fn weight_budget(&self) -> u64 {
        self.info().memory_bytes
    }

    /// Backend-specific status lines for `cortiq gpu` (pipeline cache, limits).
    fn status_lines(&self) -> Vec<String> {
        Vec::new()
    }

    fn resident_bytes(&self) -> u64 {
        0
    }

    fn upload_bytes(&self) -> u64 {
        0
    }
}
