//! The portable backend (feature `gpu`): wgpu over Vulkan, DX12 or Metal, one WGSL code base
//! (`kernels/*.wgsl`). One context per adapter: device, queue, pipelines, resident weights,
//! scratch buffers. Weights are repacked into the planar layout (`gpu/planar.rs`) and uploaded on
//! first use, split by rows where a matrix exceeds the binding-size limit, kept under the
//! weight budget, keyed by the facade's weight key and proven by a content fingerprint.
//! Every job is one command buffer with ONE compute pass and one readback; on any device
//! error nothing is written to the caller's outputs. The whole-token decode graph
//! (`graph.rs`) runs a llama model's token the same way, the batched prefill graph
//! (`graph/prefill.rs`) a chunk of its prompt.

pub mod adapter;
mod context;
mod argmax;
mod q8_out;
mod graph;
mod multi;
mod qkv_attn;
mod top_k;
mod plan;

use super::backend::{Activation, Backend, DeviceInfo, DeviceOutcome, FfnJob, GraphReadback, MatmulJob, MultiMatmulJob, PrefillGraphJob, TokenGraphJob, WeightArg};
use crate::kv::KvCache;
use super::memory::fingerprint;
use super::planar;
use super::transcode;
pub use graph::{RopeSpec, RopedAttention};
pub use q8_out::{Int8Units, UnitSetting};
pub use qkv_attn::{qkv_attn_wanted, QKV_ATTN_MAX_COLS};
pub use plan::GEMM_MIN_BATCH;
pub use context::{int8_layers, MatvecShape, PipelineCacheState, Variant, WgpuContext, XMode, Q8_CODECS};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use wgpu::util::DeviceExt;

/// One row range of a resident weight, in its own buffer.
struct Chunk {
    buf: wgpu::Buffer,
    row0: u32,
    rows: u32,
    units: u32,
    regions: [u32; 3],
}

struct Resident {
    codec: cortiq_core::Codec,
    chunks: Vec<Chunk>,
    fingerprint: u64,
    bytes: u64,
    /// A bound on its values' magnitude (`planar::value_bound`; infinite where unknown): past
    /// f16's range the prompt GEMMs keep it off the matrix units.
    value_bound: f32,
}

/// Why a weight cannot be made resident (the job then declines; nothing was changed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unfit {
    /// It would exceed the weight budget.
    Budget,
    /// A row exceeds the largest binding, or the shape has no planar layout.
    Limits,
    /// Its codec's rewrite for the kernels (`gpu/transcode.rs`) cannot hold its scales (or BF16 values).
    Scales,
}

impl Unfit {
    /// Why a job declines (`graph`: why a graph does, the same after "cannot build a graph: ").
    fn why(self, graph: bool) -> &'static str {
        match self {
            Unfit::Budget => crate::gpu::declined_why!(graph, "weight budget exhausted"),
            Unfit::Limits => crate::gpu::declined_why!(graph, "matrix shape exceeds the adapter's limits"),
            Unfit::Scales => crate::gpu::declined_why!(graph, "a matrix's scales or BF16 values do not fit the f16 of its device codec"),
        }
    }
}

/// Per-job device buffers, grown on demand and reused (a growth makes the job cold).
#[derive(Default)]
struct Scratch {
    bufs: HashMap<&'static str, wgpu::Buffer>,
}

impl Scratch {
    /// The named buffer with at least `bytes` bytes; `true` when it had to be (re)created.
    fn get(&mut self, device: &wgpu::Device, name: &'static str, bytes: u64, usage: wgpu::BufferUsages) -> (wgpu::Buffer, bool) {
        let bytes = bytes.max(16).next_power_of_two();
        if let Some(b) = self.bufs.get(name).filter(|b| b.size() >= bytes) {
            return (b.clone(), false);
        }
        let b = device.create_buffer(&wgpu::BufferDescriptor { label: Some(name), size: bytes, usage, mapped_at_creation: false });
        self.bufs.insert(name, b.clone());
        (b, true)
    }
}

/// One queued dispatch of a job.
enum Step<'a> {
    /// y block `y_base` (batch, rows) = x . W^T.
    Matvec { w: &'a Resident, x: &'a wgpu::Buffer, y: &'a wgpu::Buffer, y_base: u32, cols: u32, batch: u32 },
    /// g <- act(g) * u over n floats.
    Act { g: &'a wgpu::Buffer, u: &'a wgpu::Buffer, n: u32, act: u32 },
    /// y block `y_base` (batch, rows) = x . W^T with x quantized to int8 (`upload_q8`:
    /// values xq, scales xd): a matvec per row, from `GEMM_MIN_BATCH` rows the int8 GEMM,
    /// on the matrix units where `units` (the test hook's; per-op jobs, unguarded, never).
    MatmulQ8 { w: &'a Resident, xq: &'a wgpu::Buffer, xd: &'a wgpu::Buffer, y: &'a wgpu::Buffer, y_base: u32, cols: u32, batch: u32, units: bool },
}

/// The activations a timed or tested matvec multiplies: f32, or int8 per 32-value unit
/// (the CPU path's rule; `Q8_CODECS` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activations {
    F32,
    Int8,
}

pub struct WgpuBackend {
    ctx: WgpuContext,
    weights: Mutex<HashMap<u64, Resident>>,
    scratch: Mutex<Scratch>,
    /// The token graph's buffers for the model last run.
    graph: Mutex<Option<graph::ModelGraph>>,
    /// KV mirrors per sequence.
    mirrors: Mutex<HashMap<u64, graph::Mirror>>,
    /// Token-graph profile (`CMF_GRAPH_HOSTPROF`).
    profile: Mutex<super::backend::GraphProfile>,
    uploaded: AtomicU64,
    resident: AtomicU64,
    info: DeviceInfo,
    /// Whether the token graph multiplies int8 activations where every matrix of its layers
    /// has an int8 kernel: `CMF_WGPU_INT8=1` / `=0`, or None (unset): where the adapter has
    /// the int8 dot product (`int8_graph_wanted`).
    int8_graph: Option<bool>,
    /// Whether the prefill graph's GEMMs take int8 activations where every layer matrix has
    /// an int8 kernel (on unless `CMF_WGPU_PREFILL_INT8=0`; measured on the H200,
    /// `bench/results/h200-s11/call1/`: llama-8b q4_0 pp512 1176 -> 2286 tok/s).
    int8_prefill: bool,
    /// Stages left out of the recorded token for profiling (`CMF_GRAPH_SKIP`; none by default).
    skip: crate::gpu::stage_skip::StageSkip,
    /// Whether the token graph runs a stage's matrices over one input as one dispatch
    /// (`multi.rs`; on unless `CMF_WGPU_MULTI=0`).
    multi: bool,
    /// Whether the token graph's attention split applies RoPE and appends the token's K/V
    /// itself (no rope_store dispatch; on unless `CMF_WGPU_ROPE_FOLD=0`).
    rope_fold: bool,
    /// Whether the int8 token graph's attention combine writes the output projection's int8
    /// input itself (no quantize dispatch between; on unless `CMF_WGPU_COMBINE_Q8=0`).
    combine_q8: bool,
    /// Whether the int8 token graph's gate and up write down's int8 input themselves
    /// (`q8_out.rs`: no quantize dispatch between; on unless `CMF_WGPU_GLU_Q8=0`).
    glu_q8: bool,
    /// Whether its output and down projections write the next stage's normed int8 input
    /// themselves, the norm's scale applied by the consumers (`q8_out.rs`, `XMode::Int8Norm`:
    /// no quantize dispatch before QKV and gate/up; on unless `CMF_WGPU_NORM_Q8=0`; needs
    /// `glu_q8`).
    norm_q8: bool,
    /// Whether that graph's attention split computes its own Q, K and V (`qkv_attn.rs`: no
    /// QKV dispatch; needs `norm_q8` and `rope_fold`): `CMF_WGPU_QKV_ATTN=1` / `=0`, or None
    /// (unset): by the row's width (`qkv_attn_wanted`).
    qkv_attn: Option<bool>,
    /// Whether the prefill graph's quantizers guard their values for f16 even where nothing
    /// rounds them to f16 (no matrix units): tests of the guard's rerun on any adapter.
    f16_guard_forced: bool,
}

/// Whether a token graph takes int8 activations: the setting where there is one, else
/// wherever the adapter has an int8 dot product (`q8_matvec`). Measured on the H200
/// (bench/NOTES.md, nineteenth session), tg128 f32 graph -> int8 graph: smollm2-135m q4_0
/// 850 -> 935 tok/s (q8_0 831 -> 891, q4_1 836 -> 929), llama-1b and llama-8b ahead since
/// the tenth session.
pub fn int8_graph_wanted(setting: Option<bool>, q8_matvec: bool) -> bool {
    q8_matvec && setting.unwrap_or(true)
}

/// Device bytes a weight's row takes once repacked (the planar layout, with room for a
/// chunk's alignment), as residency counts them against the budget.
fn planar_row_bytes(v: &crate::cpu::matmul::WeightView) -> u64 {
    planar::bytes_per_row(transcode::planar_codec(v.codec), v.cols) as u64 + 64
}

impl WgpuBackend {
    /// Bring up the adapter `CMF_GPU_ADAPTER` names (or the best one), with pipelines built.
    pub fn new() -> Result<WgpuBackend, String> {
        let pin = std::env::var("CMF_GPU_ADAPTER").ok();
        let budget = std::env::var("CMF_GPU_BUDGET").ok();
        WgpuBackend::open(pin.as_deref(), budget.as_deref(), None)
    }

    /// Bring up an adapter with an explicit pin, budget setting (`CMF_GPU_BUDGET` syntax) and
    /// optionally a binding size below the adapter's (to exercise the row split).
    pub fn open(pin: Option<&str>, budget: Option<&str>, binding_cap: Option<u64>) -> Result<WgpuBackend, String> {
        let ctx = WgpuContext::open(pin, budget, binding_cap)?;
        let info = ctx.info.clone();
        let skip = crate::gpu::stage_skip::StageSkip::from_env()?;
        if let Some(w) = skip.warning() {
            eprintln!("cortiq: wgpu: {w}");
        }
        let setting = |name: &str| match std::env::var(name).as_deref() {
            Ok("1") => Some(true),
            Ok("0") => Some(false),
            _ => None,
        };
        let (int8_graph, qkv_attn) = (setting("CMF_WGPU_INT8"), setting("CMF_WGPU_QKV_ATTN"));
        Ok(WgpuBackend { ctx, weights: Mutex::new(HashMap::new()), scratch: Mutex::new(Scratch::default()), graph: Mutex::new(None), mirrors: Mutex::new(HashMap::new()), profile: Mutex::new(Default::default()), uploaded: AtomicU64::new(0), resident: AtomicU64::new(0), info, int8_graph, int8_prefill: !crate::gpu::selection::switched_off("CMF_WGPU_PREFILL_INT8"), skip, multi: !crate::gpu::selection::switched_off("CMF_WGPU_MULTI"), rope_fold: !crate::gpu::selection::switched_off("CMF_WGPU_ROPE_FOLD"), combine_q8: !crate::gpu::selection::switched_off("CMF_WGPU_COMBINE_Q8"), glu_q8: !crate::gpu::selection::switched_off("CMF_WGPU_GLU_Q8"), norm_q8: !crate::gpu::selection::switched_off("CMF_WGPU_NORM_Q8"), qkv_attn, f16_guard_forced: false })
    }

    /// The same backend with the token graph's int8 activations on or off (`CMF_WGPU_INT8`),
    /// for tests and measurements that compare both in one process.
    pub fn with_int8_graph(mut self, on: bool) -> WgpuBackend {
        self.int8_graph = Some(on);
        self
    }

    /// The same backend with the int8 graph's QKV folded into its attention split or not
    /// (`CMF_WGPU_QKV_ATTN`), for tests and measurements.
    pub fn with_qkv_attn(mut self, on: bool) -> WgpuBackend {
        self.qkv_attn = Some(on);
        self
    }

    /// The same backend with these token-graph stages left out (`CMF_GRAPH_SKIP`), for tests.
    pub fn with_stage_skip(mut self, skip: crate::gpu::stage_skip::StageSkip) -> WgpuBackend {
        self.skip = skip;
        self
    }

    /// The same backend with the prefill graph's int8 activations on or off
    /// (`CMF_WGPU_PREFILL_INT8`), for tests and measurements.
    pub fn with_int8_prefill(mut self, on: bool) -> WgpuBackend {
        self.int8_prefill = on;
        self
    }

    /// The same backend with the int8 GEMMs and the prompt attention on the adapter's matrix
    /// units or not (`CMF_WGPU_MATRIX_UNITS`; only where it has them), for tests and
    /// measurements.
    pub fn with_matrix_units(mut self, on: bool) -> WgpuBackend {
        self.info.matrix_units = self.ctx.set_matrix_units(on);
        self
    }

    /// The same backend with the prefill graph's f16 guard in its quantizers whether or not
    /// the adapter has matrix units (where it has none, a tripped guard reruns the chunk on
    /// the same kernels), for tests of the guard's rerun on any adapter.
    pub fn with_f16_guard_forced(mut self, on: bool) -> WgpuBackend {
        self.f16_guard_forced = on;
        self
    }

    /// The matvec kernel's workgroup shape for a matrix of this codec and shape.
    pub fn matvec_shape(&self, codec: cortiq_core::Codec, rows: usize, cols: usize) -> Option<MatvecShape> {
        let clamp = |n: usize| n.min(u32::MAX as usize) as u32;
        self.ctx.matvec_pipeline(codec, clamp(rows), clamp(cols), Variant::PLAIN).ok().map(|(_, s)| s)
    }

    /// The pipeline cache's state, for `cortiq gpu`.
    pub fn pipeline_cache(&self) -> &PipelineCacheState {
        &self.ctx.cache_state
    }

    /// Names of the adapters this machine offers (for `cortiq gpu`).
    pub fn adapters() -> Vec<String> {
        context::adapter_list().into_iter().enumerate().map(|(i, (d, backend))| format!("{i}: {} ({:?}, {backend})", d.name, d.kind)).collect()
    }

    /// Make every weight resident (repack, split under the binding limit, upload);
    /// `Ok(true)` when something was uploaded (cold); `Err` when a weight cannot be placed.
    fn ensure(&self, map: &mut HashMap<u64, Resident>, ws: &[&WeightArg]) -> Result<bool, Unfit> {
        let mut cold = false;
        for w in ws {
            let fp = fingerprint(w.view.bytes);
            if map.get(&w.key).is_some_and(|r| r.fingerprint == fp) {
                continue;
            }
            let v = &w.view;
            // The codec the kernels read it in (the file's, or its rewrite: `gpu/transcode.rs`).
            let codec = transcode::planar_codec(v.codec);
            let per_row = planar_row_bytes(v);
            if per_row > self.ctx.max_binding {
                return Err(Unfit::Limits);
            }
            let total = per_row * v.rows as u64;
            if self.resident.load(Ordering::SeqCst) + total > self.ctx.budget {
                return Err(Unfit::Budget);
            }
            let rows_per_chunk = (self.ctx.max_binding / per_row).min(v.rows as u64).max(1) as usize;
            let row_bytes = v.row_bytes();
            let mut chunks = Vec::new();
            let mut bytes = 0u64;
            let mut value_bound = 0f32;
            for row0 in (0..v.rows).step_by(rows_per_chunk) {
                let rows = rows_per_chunk.min(v.rows - row0);
                let src = &v.bytes[row0 * row_bytes..(row0 + rows) * row_bytes];
                let src = transcode::planar_bytes(v.codec, v.cols, src).map_err(|_| Unfit::Scales)?;
                let p = planar::repack(codec, rows, v.cols, &src).ok_or(Unfit::Limits)?;
                value_bound = value_bound.max(planar::value_bound(codec, &p));
                let buf = self.ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("weight"), contents: bytemuck::cast_slice(&p.words), usage: wgpu::BufferUsages::STORAGE });
                bytes += buf.size();
                chunks.push(Chunk { buf, row0: row0 as u32, rows: rows as u32, units: p.units_per_row, regions: [p.a, p.b, p.c] });
            }
            if let Some(old) = map.insert(w.key, Resident { codec, chunks, fingerprint: fp, bytes, value_bound }) {
                self.resident.fetch_sub(old.bytes, Ordering::SeqCst);
            }
            self.resident.fetch_add(bytes, Ordering::SeqCst);
            self.uploaded.fetch_add(bytes, Ordering::SeqCst);
            cold = true;
        }
        Ok(cold)
    }

    /// Drop every resident weight but `keep` (their budget freed for them).
    fn evict_all_but(&self, map: &mut HashMap<u64, Resident>, keep: &[&WeightArg]) {
        let keep: std::collections::HashSet<u64> = keep.iter().map(|w| w.key).collect();
        map.retain(|key, r| {
            let stays = keep.contains(key);
            if !stays {
                self.resident.fetch_sub(r.bytes, Ordering::SeqCst);
            }
            stays
        });
    }

    fn supported(ws: &[&WeightArg], batch: usize) -> Result<(), &'static str> {
        if batch == 0 || batch > plan::MAX_GRID as usize {
            return Err("batch outside 1..=65535");
        }
        for w in ws {
            if !transcode::planar_supports(w.view.codec, w.view.cols) || w.view.cols % 4 != 0 {
                return Err("codec or width without a wgpu kernel");
            }
            if w.view.rows == 0 || w.view.rows * batch >= u32::MAX as usize / 2 || w.view.cols * batch >= u32::MAX as usize / 2 {
                return Err("shape beyond 32-bit indexing");
            }
        }
        Ok(())
    }

    /// Encode `steps` in one compute pass, read back `y` (`read` floats), in one submission.
    fn submit(&self, steps: &[Step], y: &wgpu::Buffer, read: u64, scratch: &mut Scratch) -> Result<(Vec<f32>, bool), String> {
        self.submit_timed(steps, y, read, scratch, None)
    }

    /// `submit`, and with `timer` (a 2-entry timestamp query set) the pass's GPU time.
    fn submit_timed(&self, steps: &[Step], y: &wgpu::Buffer, read: u64, scratch: &mut Scratch, timer: Option<(&wgpu::QuerySet, &mut f64)>) -> Result<(Vec<f32>, bool), String> {
        let dev = &self.ctx.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = dev.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let mut params = plan::Params::default();
        let mut planned = Vec::new();
        for s in steps {
            match s {
                Step::Matvec { w, x, y, y_base, cols, batch } => plan::matmul(&self.ctx, w, plan::MatvecIo::plain(x, y, *y_base), *cols, *batch, false, &mut params, &mut planned)?,
                Step::Act { g, u, n, act } => plan::act(&self.ctx, g, u, *n, *act, &mut params, &mut planned),
                Step::MatmulQ8 { w, xq, xd, y, y_base, cols, batch, units } => {
                    let io = plan::MatvecIo { x: xq, x2: Some(xd), y, y_base: *y_base, variant: Variant { x: XMode::Int8, add: false }, eps: 0.0 };
                    plan::matmul(&self.ctx, w, io, *cols, *batch, *units, &mut params, &mut planned)?
                }
            }
        }
        let (pbuf, pcold) = scratch.get(dev, "params", params.0.len() as u64, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
        let (staging, scold) = scratch.get(dev, "staging", read * 4, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        self.ctx.queue.write_buffer(&pbuf, 0, &params.0);
        let groups = plan::bind(dev, &planned, &pbuf);
        let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("job") });
        let timestamp_writes = timer.as_ref().map(|(q, _)| wgpu::ComputePassTimestampWrites { query_set: q, beginning_of_pass_write_index: Some(0), end_of_pass_write_index: Some(1) });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("job"), timestamp_writes });
            plan::encode(&mut pass, planned.iter().zip(&groups).map(|(p, g)| (&p.pipe, g, p.grid)), 0, None);
        }
        enc.copy_buffer_to_buffer(y, 0, &staging, 0, read * 4);
        let ticks = timer.as_ref().map(|(q, _)| {
            let (resolve, _) = scratch.get(dev, "timestamps", 16, wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
            let (back, _) = scratch.get(dev, "timestamps-read", 16, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            enc.resolve_query_set(q, 0..2, &resolve, 0);
            enc.copy_buffer_to_buffer(&resolve, 0, &back, 0, 16);
            back
        });
        self.ctx.queue.submit([enc.finish()]);
        let out = self.ctx.read_back::<f32>(&staging, read);
        if let (Some(back), Some((_, secs))) = (ticks, timer) {
            let t = self.ctx.read_back::<u64>(&back, 2)?;
            *secs = t[1].saturating_sub(t[0]) as f64 * self.ctx.queue.get_timestamp_period() as f64 * 1e-9;
        }
        let oom = pollster::block_on(oom.pop());
        let invalid = pollster::block_on(scope.pop());
        if let Some(e) = invalid.or(oom) {
            return Err(format!("wgpu: {e}"));
        }
        Ok((out?, pcold || scold))
    }

    /// Run a job over resident weights: `body` builds the steps and returns the output buffer
    /// and the float count to read; the results are split into `outs` by their lengths.
    fn run(&self, ws: &[&WeightArg], batch: usize, outs: &mut [&mut [f32]], body: impl FnOnce(&HashMap<u64, Resident>, &mut Scratch) -> Result<(Vec<f32>, bool), String>) -> DeviceOutcome {
        if let Err(why) = Self::supported(ws, batch) {
            return DeviceOutcome::Declined(why);
        }
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let cold = match self.ensure(&mut map, ws) {
            Ok(c) => c,
            Err(u) => return DeviceOutcome::Declined(u.why(false)),
        };
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        match body(&map, &mut scratch) {
            Ok((all, grew)) => {
                let mut at = 0;
                for o in outs.iter_mut() {
                    o.copy_from_slice(&all[at..at + o.len()]);
                    at += o.len();
                }
                DeviceOutcome::Completed { cold: cold || grew }
            }
            Err(e) => DeviceOutcome::Failed(e),
        }
    }

    /// Upload x (batch, cols) into the named scratch buffer.
    fn upload_x(&self, scratch: &mut Scratch, name: &'static str, x: &[f32]) -> (wgpu::Buffer, bool) {
        let (b, cold) = scratch.get(&self.ctx.device, name, x.len() as u64 * 4, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST);
        self.ctx.queue.write_buffer(&b, 0, bytemuck::cast_slice(x));
        (b, cold)
    }

    fn storage(&self, scratch: &mut Scratch, name: &'static str, floats: usize) -> (wgpu::Buffer, bool) {
        scratch.get(&self.ctx.device, name, floats as u64 * 4, wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC)
    }
}

impl WgpuBackend {
    /// GPU seconds of one batch-1 matvec (the weights resident after this call): the pass
    /// time of `n` back-to-back dispatches, cycling over `copies` (distinct keys of one
    /// shape, enough that they do not stay in the L2 cache), minus that of one, over n-1,
    /// from timestamp queries; the best of 3. `chained`: every dispatch writes the same output, so each waits for the one
    /// before (a barrier, as in a dependent chain); otherwise each writes its own buffer.
    /// `x_as`: the activations f32, or int8 (the `XMode::Int8` kernels, `Q8_CODECS` only).
    /// `Err` when the adapter has no timestamp queries.
    pub fn time_matvec(&self, copies: &[WeightArg], n: u32, chained: bool, x_as: Activations) -> Result<f64, String> {
        if !self.ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Err("the adapter has no timestamp queries".into());
        }
        let refs: Vec<&WeightArg> = copies.iter().collect();
        Self::supported(&refs, 1).map_err(str::to_string)?;
        let w = refs.first().ok_or("no weight to time")?;
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        self.ensure(&mut map, &refs).map_err(|u| u.why(false).to_string())?;
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let x0 = vec![0.5; w.view.cols];
        let (x, _) = self.upload_x(&mut scratch, "x", &x0);
        let q8 = match x_as {
            Activations::F32 => None,
            Activations::Int8 => Some(self.upload_q8(&mut scratch, &x0, x0.len()).map(|(xq, xd, _)| (xq, xd))?),
        };
        let (y, _) = self.storage(&mut scratch, "y", w.view.rows);
        let n = n.max(2);
        let ys: Vec<wgpu::Buffer> = (0..n).map(|_| self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("y"), size: w.view.rows as u64 * 4, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false })).collect();
        let cols = w.view.cols as u32;
        let steps = |k: u32| -> Vec<Step> {
            (0..k as usize)
                .map(|i| {
                    let (w, y) = (&map[&copies[i % copies.len()].key], if chained { &y } else { &ys[i] });
                    match &q8 {
                        None => Step::Matvec { w, x: &x, y, y_base: 0, cols, batch: 1 },
                        Some((xq, xd)) => Step::MatmulQ8 { w, xq, xd, y, y_base: 0, cols, batch: 1, units: false },
                    }
                })
                .collect()
        };
        self.per_dispatch(&mut scratch, &y, n, steps)
    }

    /// Test hook: x (batch, cols) . W^T through the int8-activation kernels (a matvec per
    /// row, from `GEMM_MIN_BATCH` rows the GEMM), x quantized by the CPU path's rule
    /// (`cpu::quant`); the output is poisoned with NaN before the kernel runs.
    pub fn matmul_q8(&self, w: &WeightArg, x: &[f32], batch: usize) -> Result<Vec<f32>, String> {
        if x.len() != batch * w.view.cols {
            return Err("x is not batch rows of the matrix's width".into());
        }
        self.with_q8_input(&[w], batch, x, w.view.cols, |resident, xq, xd, scratch| {
            let y = self.ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("y"), contents: bytemuck::cast_slice(&vec![f32::NAN; batch * w.view.rows]), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
            let step = Step::MatmulQ8 { w: resident[0], xq, xd, y: &y, y_base: 0, cols: w.view.cols as u32, batch: batch as u32, units: true };
            self.submit(&[step], &y, (batch * w.view.rows) as u64, scratch).map(|(out, _)| out)
        })
    }

    /// A test hook's setting: the weights `ws` resident (for `batch` rows), x (rows of `cols`
    /// values) quantized by the CPU path's rule and uploaded (`upload_q8`); `body` gets the
    /// weights' residents, x's int8 values and scales, and the scratch buffers.
    fn with_q8_input<T>(&self, ws: &[&WeightArg], batch: usize, x: &[f32], cols: usize, body: impl FnOnce(&[&Resident], &wgpu::Buffer, &wgpu::Buffer, &mut Scratch) -> Result<T, String>) -> Result<T, String> {
        Self::supported(ws, batch).map_err(str::to_string)?;
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        self.ensure(&mut map, ws).map_err(|u| u.why(false).to_string())?;
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let (xq, xd, _) = self.upload_q8(&mut scratch, x, cols)?;
        let resident: Vec<&Resident> = ws.iter().map(|w| &map[&w.key]).collect();
        body(&resident, &xq, &xd, &mut scratch)
    }

    /// x (rows of `cols` values, a multiple of 32) quantized to int8 per 32 values by the CPU
    /// path's rule, uploaded for `XMode::Int8`: the values (32 bytes a unit) and per unit (d,
    /// d * sum, sum, 0); and whether a scratch buffer had to be made for them.
    fn upload_q8(&self, scratch: &mut Scratch, x: &[f32], cols: usize) -> Result<(wgpu::Buffer, wgpu::Buffer, bool), String> {
        if !cols.is_multiple_of(crate::cpu::quant::QK) || !x.len().is_multiple_of(cols.max(1)) {
            return Err("int8 activations need rows of a multiple of 32 values".into());
        }
        let blocks = crate::cpu::quant::quantize_rows(x, cols);
        let values: Vec<u8> = blocks.iter().flat_map(|b| b.qs.map(|q| q as u8)).collect();
        let scales: Vec<f32> = blocks.iter().flat_map(|b| [b.d, b.s, b.qs.iter().map(|&q| q as i32).sum::<i32>() as f32, 0.0]).collect();
        let dev = &self.ctx.device;
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let (xq, c1) = scratch.get(dev, "xq", values.len() as u64, usage);
        let (xd, c2) = scratch.get(dev, "xd", scales.len() as u64 * 4, usage);
        self.ctx.queue.write_buffer(&xq, 0, &values);
        self.ctx.queue.write_buffer(&xd, 0, bytemuck::cast_slice(&scales));
        Ok((xq, xd, c1 || c2))
    }

    /// GPU seconds per dispatch of the smallest kernel there is (one workgroup of the
    /// activation step over 256 floats), `n` back to back as `time_matvec` times them: what
    /// a dispatch costs in a pass before its kernel does any work. `chained`: each waits for
    /// the one before (a barrier).
    pub fn time_dispatch_floor(&self, n: u32, chained: bool) -> Result<f64, String> {
        if !self.ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Err("the adapter has no timestamp queries".into());
        }
        const FLOATS: usize = 256;
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let (u, _) = self.upload_x(&mut scratch, "x", &[0.5; FLOATS]);
        let (g, _) = self.storage(&mut scratch, "y", FLOATS);
        let n = n.max(2);
        let gs: Vec<wgpu::Buffer> = (0..n).map(|_| self.storage_buf("g", FLOATS)).collect();
        let steps = |k: u32| -> Vec<Step> { (0..k as usize).map(|i| Step::Act { g: if chained { &g } else { &gs[i] }, u: &u, n: FLOATS as u32, act: 0 }).collect() };
        self.per_dispatch(&mut scratch, &g, n, steps)
    }

    /// How long a timing keeps the GPU busy before it measures.
    const CLOCK_WARMUP: std::time::Duration = std::time::Duration::from_millis(300);

    /// The pass time of `steps(n)` minus that of `steps(1)`, over n - 1, from timestamp
    /// queries; the best of 3 each (`y`: a buffer the steps write, read back after each).
    fn per_dispatch<'a>(&self, scratch: &mut Scratch, y: &wgpu::Buffer, n: u32, steps: impl Fn(u32) -> Vec<Step<'a>>) -> Result<f64, String> {
        let q = self.ctx.device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("timer"), ty: wgpu::QueryType::Timestamp, count: 2 });
        let mut pass_time = |k: u32| -> Result<f64, String> {
            let steps = steps(k);
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let mut secs = 0.0;
                self.submit_timed(&steps, y, 1, scratch, Some((&q, &mut secs)))?;
                best = best.min(secs);
            }
            Ok(best)
        };
        // The SM clock idles at a fraction of its boost and rises only under sustained load
        // (H200: 345 vs 1980 MHz, bench/NOTES.md): keep the GPU busy first.
        let warm = std::time::Instant::now();
        while warm.elapsed() < Self::CLOCK_WARMUP {
            pass_time(n)?;
        }
        let one = pass_time(1)?;
        let many = pass_time(n)?;
        Ok((many - one) / (n - 1) as f64)
    }

    /// Device bytes of a resident weight (the planar layout a matvec streams).
    pub fn resident_size(&self, key: u64) -> Option<u64> {
        self.weights.lock().unwrap_or_else(|e| e.into_inner()).get(&key).map(|r| r.bytes)
    }
}

pub(super) fn act_code(a: Activation) -> u32 {
    match a {
        Activation::Silu => 0,
        Activation::GeluExact => 1,
        Activation::GeluTanh => 2,
    }
}

impl Backend for WgpuBackend {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn is_resident(&self, key: u64) -> bool {
        self.weights.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&key)
    }

    fn matmul(&self, job: &MatmulJob, out: &mut [f32]) -> DeviceOutcome {
        let multi = MultiMatmulJob { ws: vec![job.w], x: job.x, batch: job.batch };
        self.matmul_many(&multi, &mut [out])
    }

    fn matmul_many(&self, job: &MultiMatmulJob, outs: &mut [&mut [f32]]) -> DeviceOutcome {
        let ws: Vec<&WeightArg> = job.ws.iter().collect();
        let total: usize = job.ws.iter().map(|w| w.view.rows * job.batch).sum();
        // One activation row against a codec with an int8 kernel: x quantized once on the host.
        let int8 = |w: &WeightArg| job.batch == 1 && self.info.q8_matvec && Q8_CODECS.contains(&transcode::planar_codec(w.view.codec));
        self.run(&ws, job.batch, outs, |map, scratch| {
            // The f32 row only where a matrix takes it, the int8 one likewise.
            let (x, c1) = match job.ws.iter().all(int8) {
                true => (None, false),
                false => {
                    let (x, cold) = self.upload_x(scratch, "x", job.x);
                    (Some(x), cold)
                }
            };
            let (q8, c4) = match job.ws.iter().any(int8) {
                true => self.upload_q8(scratch, job.x, job.x.len()).map(|(xq, xd, cold)| (Some((xq, xd)), cold))?,
                false => (None, false),
            };
            let (y, c2) = self.storage(scratch, "y", total);
            let mut steps = Vec::new();
            let mut base = 0u32;
            for w in &job.ws {
                let (res, cols) = (&map[&w.key], w.view.cols as u32);
                steps.push(match &q8 {
                    Some((xq, xd)) if int8(w) => Step::MatmulQ8 { w: res, xq, xd, y: &y, y_base: base, cols, batch: 1, units: false },
                    _ => Step::Matvec { w: res, x: x.as_ref().expect("uploaded: a matrix takes f32"), y: &y, y_base: base, cols, batch: job.batch as u32 },
                });
                base += (w.view.rows * job.batch) as u32;
            }
            let (v, c3) = self.submit(&steps, &y, total as u64, scratch)?;
            Ok((v, c1 || c2 || c3 || c4))
        })
    }

    fn ffn(&self, job: &FfnJob, out: &mut [f32]) -> DeviceOutcome {
        let ff = job.gate.view.rows;
        if job.up.view.rows != ff || job.down.view.cols != ff || job.gate.view.cols != job.up.view.cols {
            return DeviceOutcome::Declined("FFN shapes do not chain");
        }
        let n = (job.batch * ff) as u32;
        self.run(&[&job.gate, &job.up, &job.down], job.batch, &mut [out], |map, scratch| {
            let (x, c1) = self.upload_x(scratch, "x", job.x);
            let (g, c2) = self.storage(scratch, "gate", n as usize);
            let (u, c3) = self.storage(scratch, "up", n as usize);
            let (y, c4) = self.storage(scratch, "y", job.batch * job.down.view.rows);
            let (cols, b) = (job.gate.view.cols as u32, job.batch as u32);
            let steps = [
                Step::Matvec { w: &map[&job.gate.key], x: &x, y: &g, y_base: 0, cols, batch: b },
                Step::Matvec { w: &map[&job.up.key], x: &x, y: &u, y_base: 0, cols, batch: b },
                Step::Act { g: &g, u: &u, n, act: act_code(job.act) },
                Step::Matvec { w: &map[&job.down.key], x: &g, y: &y, y_base: 0, cols: ff as u32, batch: b },
            ];
            let (v, c5) = self.submit(&steps, &y, (job.batch * job.down.view.rows) as u64, scratch)?;
            Ok((v, c1 || c2 || c3 || c4 || c5))
        })
    }

    fn token_graph(&self, job: &TokenGraphJob, out: GraphReadback) -> DeviceOutcome {
        self.run_graph(job, out)
    }

    fn prefill_graph(&self, job: &PrefillGraphJob, out: GraphReadback) -> DeviceOutcome {
        self.run_prefill(job, out)
    }

    fn pull_kv(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        self.pull_rows(seq, from, to, host)
    }

    /// The leading layers whose weights fit the weight budget together (the head counted
    /// only when every layer fits: the whole token then runs, head included); a model that
    /// fits whole runs whole. Depends on the model and the budget only, so a model's graph
    /// keeps its layer count.
    fn graph_layers(&self, model: &crate::model::llama::Llama) -> usize {
        let bytes = |w: &crate::model::llama::Weight| {
            let v = model.weight_arg(w).view;
            planar_row_bytes(&v) * v.rows as u64
        };
        let budget = self.ctx.budget;
        let mut used = 0u64;
        for (i, l) in model.layers.iter().enumerate() {
            used += l.matrices().iter().map(bytes).sum::<u64>();
            if used > budget {
                return i;
            }
        }
        let n = model.layers.len();
        if used + bytes(&model.output) <= budget {
            n
        } else {
            n - 1
        }
    }

    fn reset_sequence(&self, seq: u64) {
        self.mirrors.lock().unwrap_or_else(|e| e.into_inner()).remove(&seq);
    }

    fn graph_profile(&self) -> Option<super::backend::GraphProfile> {
        Some(self.profile.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn upload_bandwidth(&self) -> Option<f64> {
        self.ctx.upload_bandwidth()
    }

    fn weight_budget(&self) -> u64 {
        if self.info.memory_bytes == u64::MAX {
            u64::MAX
        } else {
            self.ctx.budget
        }
    }

    fn status_lines(&self) -> Vec<String> {
        vec![
            format!("pipeline cache: {}", self.ctx.cache_state),
            format!("largest binding: {} MiB (larger matrices are split by rows)", self.ctx.max_binding >> 20),
            format!("matvec reduction: {}", if self.info.subgroups { "subgroup operations" } else { "shared memory (no subgroups)" }),
            match self.int8_prefill && self.info.q8_matvec {
                true => self.ctx.prompt_gemm_line(),
                false => "prompt GEMMs: f32 activations (no int8 dot product on this backend, or CMF_WGPU_PREFILL_INT8=0)".into(),
            },
            self.ctx.prompt_attention_line(),
        ]
        .into_iter()
        .chain(self.skip.warning())
        .collect()
    }

    fn resident_bytes(&self) -> u64 {
        self.resident.load(Ordering::SeqCst)
    }

    fn upload_bytes(&self) -> u64 {
        self.uploaded.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::int8_graph_wanted;

    #[test]
    fn the_token_graph_takes_int8_activations_where_the_adapter_has_the_dot_product_unless_told() {
        assert!(int8_graph_wanted(None, true));
        assert!(!int8_graph_wanted(Some(false), true));
        assert!(!int8_graph_wanted(Some(true), false));
        assert!(!int8_graph_wanted(None, false));
    }
}
