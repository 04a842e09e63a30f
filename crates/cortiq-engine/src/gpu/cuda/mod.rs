//! The native CUDA backend (feature `cuda`): cudarc with the driver and NVRTC loaded at run
//! time, so the build needs no CUDA toolkit. Kernels live in `kernels/*.cu`, compiled by NVRTC
//! once per (source, architecture, NVRTC version) and kept on disk (`ptx_cache.rs`). Weights
//! are uploaded on first use and stay resident, keyed by the facade's weight key and proven
//! by a content fingerprint. Every job here is one stream, one synchronize;
//! on any CUDA error nothing is written to the caller's outputs.
//!
//! Weights are repacked into the planar layout (`gpu/planar.rs`, 16-byte aligned payloads,
//! scales apart) on upload, K-quants and Q5_0 transcoded to a kind the kernels decode first
//! (`layout.rs`). Quantized weights are dotted with int8 activations (the CPU
//! path's q8 rule, `DeviceInfo::q8_activations`); per-op matvec (prompt rows in tiles), the
//! dense FFN, the whole-token decode graph and the batched prefill graph (`graph.rs`) use the
//! same row kernels (`run_rows` in matvec.cu); from `MMA_MIN_ROWS` activation rows, Q4_0,
//! Q4_1 and Q8_0 weights go through int8 tensor-core GEMMs instead (mma.cu), whose input is
//! quantized once per op by the same rule; the prefill graph takes cuBLAS's f16 GEMMs behind
//! a dequant step where libcublas loads (`blas.rs`). Launches in the graphs may overlap the
//! kernel before them (`launch.rs`); a small model's token-graph FFN is one launch a layer
//! (`ffn.rs`).

mod anatomy;
mod att_group;
mod blas;
mod chain;
mod cluster;
mod ffn;
mod graph;
mod launch;
mod layout;
mod probe;
mod spread;
mod ptx_cache;
mod top_k;
mod trace;

use super::backend::{Activation, Backend, DeviceInfo, DeviceOutcome, FfnJob, GraphReadback, MatmulJob, MultiMatmulJob, PrefillGraphJob, TokenGraphJob, WeightArg};
use crate::kv::KvCache;
use super::memory::fingerprint;
use super::stage_skip::StageSkip;
use anatomy::KernelSwitches;
use launch::KernelArgs;
use layout::{f16_decodable, int8_kind, kind};
pub use probe::GemmProbe;
use ptx_cache::KernelCacheState;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One module: the matvec helpers, then the graph kernels, the tensor-core GEMMs and the
/// prompt chunk's tensor-core attention that use them.
const KERNELS: [&str; 6] = [include_str!("kernels/matvec.cu"), include_str!("kernels/graph.cu"), include_str!("kernels/mma.cu"), include_str!("kernels/flash.cu"), include_str!("kernels/topk.cu"), include_str!("kernels/cluster.cu")];
/// Kernels without variants.
const FIXED_KERNELS: [&str; 22] = ["attention_merge", "act_mul", "embed_row", "gemma_norm_rope", "add_normed", "dequant_f16", "to_f16", "rms_norm_f16", "rope_append_rows", "act_mul_f16", graph::FLASH_ROWS[0].1, graph::FLASH_ROWS[1].1, graph::FLASH_ROWS[2].1, graph::FLASH_WINDOW[0].1, graph::FLASH_WINDOW[1].1, graph::FLASH_WINDOW[2].1, graph::ATTENTION_SPLIT[0].1, graph::ATTENTION_SPLIT[1].1, graph::ATTENTION_SPLIT[2].1, graph::ATTENTION_WINDOW_SPLIT[0].1, graph::ATTENTION_WINDOW_SPLIT[1].1, graph::ATTENTION_WINDOW_SPLIT[2].1];
/// Kernels instantiated per codec kind (`ROW_KINDS`) and rows per warp group, which stage their
/// activation row in dynamic shared memory: (name prefix, row counts).
const ROW_KERNELS: [(&str, &[usize]); 10] = [("matvec", &[1, 2, 4]), ("qkv_rope", &[2]), ("gate_up_silu", &[2, 4]), ("matmul", &[2]), ("qkv_rope_tile", &[2]), ("gate_up_silu_tile", &[2]), ("matvec_pend", &[1, 2, 4]), ("qkv_rope_pend", &[2]), ("qkv_rows", &[2]), ("gate_up_gelu_tanh", &[2, 4])];
/// Row kernels of the token graph's int8 chain (`chain.rs`), instantiated per int8-dotted
/// codec kind (`CHAIN_KINDS`) and rows per warp group: (name prefix, row counts).
const CHAIN_KERNELS: [(&str, &[usize]); 3] = [("matvec_img", &[1, 2, 4]), ("gate_up_q8", &[4]), ("matvec_img_fold", &[1, 2, 4])];
/// The codec kinds `ROW_KERNELS` and `CHAIN_KERNELS` are instantiated for.
const ROW_KINDS: [i32; 9] = [0, 1, 2, 3, 4, layout::KIND_Q6, layout::KIND_Q4K, layout::KIND_Q5K, layout::KIND_Q51];
const CHAIN_KINDS: [i32; 7] = [0, 1, 2, layout::KIND_Q6, layout::KIND_Q4K, layout::KIND_Q5K, layout::KIND_Q51];
/// Tensor-core GEMMs (mma.cu) for a prompt's rows, per codec kind they take (Q4_0, Q4_1, Q8_0):
/// name prefixes; `quantize_rows` prepares their int8 input.
const MMA_KERNELS: [&str; 3] = ["mma_matmul", "mma_qkv_rope", "mma_gate_up_silu"];
const MMA_KINDS: [i32; 3] = [0, 1, 2];
/// Fewest activation rows that take the tensor-core GEMMs (64-row tiles) instead of the
/// row kernels' tiles of up to 8.
pub(super) const MMA_MIN_ROWS: usize = 16;
/// Threads per tensor-core GEMM block: 4 warps of 32 x 32 outputs.
const MMA_THREADS: u32 = 128;
/// Most activation rows a prefill tile stages (`MATMUL_TILE` in matvec.cu).
const MATMUL_TILE: usize = 8;
/// Fraction of device memory weights may occupy unless `CMF_GPU_BUDGET` says otherwise (the
/// rest: activations, KV, the driver).
const WEIGHT_BUDGET_FRACTION: f64 = 0.9;
/// Threads per block of the row kernels: 8 warps.
const ROW_THREADS: u32 = 256;

/// An FFN activation as the kernels number it (`GLU_SILU`, `GLU_GELU_EXACT`, `GLU_GELU_TANH`
/// in matvec.cu: `act_mul`, `act_mul_f16`).
pub(super) fn act_code(act: Activation) -> i32 {
    match act {
        Activation::Silu => 0,
        Activation::GeluExact => 1,
        Activation::GeluTanh => 2,
    }
}

/// Name of the row kernel `prefix` for codec kind `kind` and `r` rows per warp group.
pub(super) fn row_kernel(prefix: &str, kind: i32, r: usize) -> String {
    format!("{prefix}_k{kind}_r{r}")
}

/// Blocks a row kernel needs to give each warp one group of `r` of its `rows` rows.
fn row_groups_blocks(rows: usize, r: usize) -> usize {
    rows.div_ceil(r * (ROW_THREADS as usize / 32))
}

/// Rows per warp group for a matrix of `rows` rows: large matrices share each staged x unit
/// among 4 rows; small ones keep every row on its own warp so they spread over the whole chip
/// (on llama-1b, 1, 2 or 4 rows everywhere decoded within 2.2 % of each other: NOTES.md, c3).
pub(super) fn matvec_rows_per_group(rows: usize) -> usize {
    if rows >= 16384 {
        4
    } else if rows >= 4096 {
        2
    } else {
        1
    }
}

/// Of `choices` (rows per warp group, largest first), the largest whose busiest warp
/// walks at most 10 % more rows than the best choice's busiest warp, for `rows` rows over
/// `warps` warps (a warp takes groups warp, warp + warps, ...): a kernel lasts as long as its
/// busiest warp, and larger groups share each staged activation unit among more rows.
pub(super) fn balanced_rows_per_group(rows: usize, choices: &[usize], warps: usize) -> usize {
    let busiest = |r: usize| rows.div_ceil(r).div_ceil(warps.max(1)) * r;
    let best = choices.iter().map(|&r| busiest(r)).min().unwrap_or(0);
    choices.iter().copied().find(|&r| busiest(r) * 10 <= best * 11).unwrap_or(1)
}

/// A resident weight: its planar device bytes, where their scale region starts, and the
/// fingerprint of the host bytes they came from.
struct Resident {
    data: CudaSlice<u8>,
    /// Scale region offset in u32 words (`Planar::a`).
    a_off: i32,
    fingerprint: u64,
}

/// Shared bytes a kernel stages for an activation row of `cols` values (`stage_x` in
/// matvec.cu): int8 values plus 12 bytes per 32-value group, or the floats.
fn staged_bytes(kind: i32, cols: usize) -> usize {
    if int8_kind(kind) {
        cols + 12 * (cols / 32)
    } else {
        4 * cols
    }
}

/// Units in flight per thread in a row kernel's weight ring: Q8_0 (two payload words a
/// unit), the other kinds.
const RING_UNITS_Q8: usize = 8;
const RING_UNITS: usize = 8;

/// Shared bytes of a row kernel's weight ring (`Ring` in matvec.cu): per thread
/// `RING_UNITS_Q8` or `RING_UNITS` units of 16-byte payload words (two for Q8_0) and, for
/// quantized kinds, a scale word (Q6_K: its 3-word record; Q4_K: a word, a warp's 32 holding
/// its 4 superblocks' 5-word records; Q5_K: that and its high-bit word; Q5_1: its scale word
/// and its high-bit word; `layout.rs`).
fn ring_bytes(kind: i32) -> usize {
    let (units, words, scale) = match kind {
        2 => (RING_UNITS_Q8, 2, 4),
        layout::KIND_Q6 => (RING_UNITS, 1, 12),
        layout::KIND_Q5K | layout::KIND_Q51 => (RING_UNITS, 1, 8),
        layout::KIND_Q4K | 0 | 1 => (RING_UNITS, 1, 4),
        _ => (RING_UNITS, 1, 0),
    };
    ROW_THREADS as usize * units * (16 * words + scale)
}

/// Dynamic shared memory of a row kernel over `cols` columns: the staged activation row
/// (rounded up to 16 bytes), then the weight ring.
pub(super) fn row_smem(kind: i32, cols: usize) -> usize {
    tile_smem(kind, cols, 1)
}

/// Dynamic shared memory of a row kernel staging `nb` activation rows of `cols` columns.
pub(super) fn tile_smem(kind: i32, cols: usize, nb: usize) -> usize {
    nb * staged_bytes(kind, cols).next_multiple_of(16) + ring_bytes(kind)
}

/// The kernels loaded with the device's dynamic shared memory limit: the row kernels per
/// kind and rows per warp group, the tensor-core GEMMs, the fused FFN, the prompt rows'
/// quantizer and attention.
fn dynamic_smem_kernels() -> Vec<String> {
    let row_kernels = ROW_KERNELS.iter().map(|&(p, rs)| (p, rs, &ROW_KINDS[..])).chain(CHAIN_KERNELS.iter().map(|&(p, rs)| (p, rs, &CHAIN_KINDS[..])));
    let mut names: Vec<String> = row_kernels.flat_map(|(prefix, rs, kinds)| kinds.iter().flat_map(move |&kind| rs.iter().map(move |&r| row_kernel(prefix, kind, r)))).collect();
    names.extend(MMA_KERNELS.iter().flat_map(|p| MMA_KINDS.map(|k| format!("{p}_k{k}"))));
    names.extend(ffn::KINDS.iter().flat_map(|&k| ffn::UNITS_PER_BLOCK.map(|nu| ffn::kernel(k, nu))));
    names.push("quantize_rows".into());
    names.extend(graph::ATTENTION_ROWS_DIMS.map(|hd| format!("attention_rows_d{}", hd / 32)));
    names
}

/// The tensor-core GEMM's stage layout (`MmaStage` in mma.cu), stated here once and handed
/// to the kernels as #defines (`kernel_source`): 32-value units per pipeline stage, stages in
/// flight, rows per tile (activation and weight), and the byte strides of a tile row, padded
/// by 16 so fragment loads hit distinct banks.
const MMA_UNITS: usize = 4;
const MMA_STAGES: usize = 3;
const MMA_ROWS: usize = 64;
const MMA_A_STRIDE: usize = MMA_UNITS * 32 + 16;

/// Bytes of a weight-tile row in a stage: Q8_0 32 payload bytes a unit, Q4_0 / Q4_1 16.
const fn mma_b_stride(kind: i32) -> usize {
    MMA_UNITS * if kind == 2 { 32 } else { 16 } + 16
}

/// Dynamic shared memory of a tensor-core GEMM block: per stage the activation tile, the
/// weight tile, the weight rows' unit scales and the activation rows' unit scales.
pub(super) fn mma_smem(kind: i32) -> usize {
    // Per row and unit: weight scale bytes (Q4_1: d and m) and activation scale bytes
    // (Q4_1: d and the scaled sum).
    let (weight_scale, x_scale) = if kind == 1 { (4, 8) } else { (2, 4) };
    MMA_STAGES * MMA_ROWS * (MMA_A_STRIDE + mma_b_stride(kind) + (weight_scale + x_scale) * MMA_UNITS)
}

/// The kernel module's source: the layout #defines the kernels share with the host (the row
/// kernels' block size and weight ring, the GEMM stages, the attention tile's pad and threads,
/// the block timeline's ring), `extra` (the profiling switches of `anatomy.rs`, normally
/// none), then the kernel files.
fn kernel_source(extra: &str) -> String {
    let defines = format!(
        "#define ROW_THREADS {ROW_THREADS}\n#define RING_UNITS {RING_UNITS}\n#define RING_UNITS_Q8 {RING_UNITS_Q8}\n#define MMA_UNITS {MMA_UNITS}\n#define MMA_STAGES {MMA_STAGES}\n#define MMA_ROWS {MMA_ROWS}\n#define MMA_A_STRIDE {MMA_A_STRIDE}\n#define MMA_B_STRIDE_Q4 {}\n#define MMA_B_STRIDE_Q8 {}\n#define ATT_ROWS_PAD {}\n#define ATT_ROWS_THREADS {}\n#define TRACE_RING {}\n",
        mma_b_stride(0),
        mma_b_stride(2),
        graph::ATT_ROWS_PAD,
        graph::ATT_ROWS_THREADS,
        trace::RING
    );
    defines + &top_k::defines() + extra + &KERNELS.concat()
}

/// Whether the tensor-core GEMMs take a weight of codec kind `kind` over `cols` columns
/// within `smem_limit` shared bytes: Q4_0, Q4_1 or Q8_0, an even number of 32-value units,
/// and a row `quantize_rows` can stage.
pub(super) fn mma_fits(kind: i32, cols: usize, smem_limit: usize) -> bool {
    MMA_KINDS.contains(&kind) && cols.is_multiple_of(64) && staged_bytes(0, cols).next_multiple_of(16) <= smem_limit && mma_smem(kind) <= smem_limit
}

/// Activation rows per prefill tile for `cols` columns: the most (of 8, 4, 2, 1) whose staged
/// rows and weight ring fit `smem_limit` bytes.
pub(super) fn matmul_tile(kind: i32, cols: usize, smem_limit: usize) -> usize {
    [MATMUL_TILE, 4, 2, 1].into_iter().find(|&nb| tile_smem(kind, cols, nb) <= smem_limit).unwrap_or(1)
}

/// How a matvec launch treats its input and output (`launch_matvec`).
#[derive(Default, Clone, Copy)]
struct MatvecHow<'a> {
    /// RMS-norm x with these weights and eps first.
    norm: Option<(&'a CudaSlice<f32>, f32)>,
    /// Add into y instead of overwriting it.
    add: bool,
    /// Fold y's argmax (matvec.cu's `argmax_key`) into this zeroed u64 (batch 1 only).
    argmax: Option<&'a CudaSlice<u64>>,
    /// The launch may start while the kernel before it drains (`launch::launch`).
    overlap: bool,
    /// Int8 scratch (xq, xd) for the tensor-core path, sized for the batch (allocated per
    /// call when None).
    quant: Option<(&'a CudaSlice<u8>, &'a CudaSlice<f32>)>,
    /// x's pending part (`ffn.rs`), staged with x (one activation row, no add).
    pending: Option<&'a CudaSlice<i64>>,
}

/// Why weights could not be made resident.
enum Unfit {
    /// They would exceed the weight budget: the job declines (the CPU runs it).
    Budget,
    /// A weight cannot take its device layout (`layout::device_layout`'s refusal: a scale
    /// its rewrite's f16 cannot hold, a shape the layout does not take): the job declines.
    Layout,
    /// The upload or the data failed.
    Failed(String),
}

impl Unfit {
    /// Why a job declines for a budget or layout refusal (`graph`: why a graph does, the same
    /// after "cannot build a graph: "); a failed upload fails the job instead (`outcome`).
    fn declined(&self, graph: bool) -> &'static str {
        match self {
            Unfit::Budget => crate::gpu::declined_why!(graph, "weight budget exhausted"),
            Unfit::Layout => crate::gpu::declined_why!(graph, "a weight cannot take its device layout (a rewritten scale or BF16 value beyond f16, or a shape the layout does not hold)"),
            Unfit::Failed(_) => crate::gpu::declined_why!(graph, "the weight upload failed"),
        }
    }

    /// The job's outcome: declined (`declined`), or failed where the upload failed.
    fn outcome(self, graph: bool) -> DeviceOutcome {
        match self {
            Unfit::Failed(e) => DeviceOutcome::Failed(e),
            u => DeviceOutcome::Declined(u.declined(graph)),
        }
    }
}

pub struct CudaBackend {
    /// Keeps the context alive for the stream and buffers.
    _ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: HashMap<String, CudaFunction>,
    /// Streaming multiprocessors (persistent row-kernel grids are sized by them).
    sms: u32,
    /// Blocks per SM of a row kernel at a given shared-memory size (occupancy, cached).
    occupancy: Mutex<HashMap<(String, u32), u32>>,
    weights: Mutex<HashMap<u64, Resident>>,
    /// The token graph's buffers for the model last run.
    graph: Mutex<Option<graph::ModelGraph>>,
    /// KV mirrors per sequence.
    mirrors: Mutex<HashMap<u64, graph::Mirror>>,
    /// The mirror of the sequence reset last, kept for the next new sequence of the same
    /// geometry (its buffers and captured token graph; locked after `mirrors`, never before).
    spare_mirror: Mutex<Option<graph::Mirror>>,
    uploaded: AtomicU64,
    resident: AtomicU64,
    /// Token-graph profile (`CMF_GRAPH_HOSTPROF`).
    profile: Mutex<super::backend::GraphProfile>,
    budget: u64,
    /// Dynamic shared memory a block may use (the device's opt-in maximum).
    smem_limit: usize,
    /// Whether launches may overlap the kernel before them (compute capability 9.0+).
    overlap: bool,
    /// Where the kernels' PTX came from (the disk cache or NVRTC).
    kernel_cache: KernelCacheState,
    /// Stages left out of the captured token for profiling (`CMF_GRAPH_SKIP`; none by default).
    skip: StageSkip,
    /// Profiling switches the kernels were compiled with (`CMF_CUDA_DEFINES`; none by default).
    switches: KernelSwitches,
    /// cuBLAS for the prefill graph's f16 GEMMs, or why they stay int8 (`blas.rs`).
    blas: Result<blas::Blas, String>,
    /// Whether prompt chunks take the tensor-core attention (flash.cu) where the head size
    /// has it (`CMF_CUDA_FLASH=0`: the FP32 tiled kernel).
    flash: bool,
    /// Whether the tensor-core prompt attention splits few tiles' keys into pieces across the
    /// SMs (`graph::flash_span`; `CMF_CUDA_FLASH_SPLIT=0`: each tile's block takes them all).
    flash_split: bool,
    /// Most prompt rows a prefill submission takes where the attention runs tiled
    /// (`graph::LONG_PREFILL_ROWS`, `CMF_CUDA_PREFILL_ROWS`).
    long_prefill_rows: usize,
    /// Where decode tokens are read back while the next one runs on `stream` (`graph.rs`).
    readback: Arc<CudaStream>,
    /// Whether `CMF_GRAPH_HOSTPROF` times each token alone (no token queued ahead).
    hostprof: bool,
    /// Which links of the token graph carry int8 images (`CMF_CUDA_INT8_CHAIN`).
    int8_chain: chain::Int8Chain,
    /// Whether the token graph may run its layers as one cluster launch (`cluster.rs`).
    cluster: bool,
    /// Where the token graph runs each FFN as one launch (`ffn.rs`, `CMF_CUDA_FFN_FUSED`).
    fused_ffn: ffn::Fusing,
    /// Context length from which decode attention runs by KV-head groups where set
    /// (`CMF_CUDA_ATT_GROUP_FROM`; i32::MAX: never), else `att_group.rs`'s rule.
    att_group_from: Option<i32>,
    /// The block timeline's reader where the kernels record one (`trace.rs`).
    trace: Mutex<Option<trace::Trace>>,
    info: DeviceInfo,
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

impl CudaBackend {
    /// Bring up device `ordinal`: context, stream, compiled kernels.
    pub fn new(ordinal: usize) -> Result<CudaBackend, String> {
        // SAFETY: these only try to dlopen the libraries and report whether that worked.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("the CUDA driver library (libcuda.so) was not found".into());
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err("the NVRTC library (libnvrtc.so) was not found; is /usr/local/cuda/lib64 on LD_LIBRARY_PATH?".into());
        }
        // A context of its own, not the device's primary one, so that one backend's
        // context-wide operations do not reach another's work in the same process (parallel
        // tests). On the shared primary context a dropped backend's cuBLAS teardown (a
        // context-wide synchronize) crashed the driver while another backend worked
        // (SIGSEGV in cuCtxSynchronize, H200, bench/results/h200-s25/call4).
        let ctx = CudaContext::new_non_primary(ordinal, 0).map_err(err)?;
        // One stream does all the work (the null stream cannot be captured into a graph).
        // SAFETY: nothing here uses a second stream, so cudarc's cross-stream event tracking
        // has nothing to order and only adds API calls to every launch.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(err)?;
        use cudarc::driver::sys::{CUdevice_attribute as A, CUfunction_attribute as F};
        let (major, minor) = (ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).map_err(err)?, ctx.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).map_err(err)?);
        if major < 8 {
            return Err(format!("compute capability {major}.{minor}: the kernels need 8.0 or newer (cp.async, __dp4a)"));
        }
        let (skip, switches) = (StageSkip::from_env()?, KernelSwitches::from_env()?);
        let long_prefill_rows = graph::long_prefill_rows(std::env::var("CMF_CUDA_PREFILL_ROWS").ok().as_deref())?;
        let int8_chain = chain::Int8Chain::parse(std::env::var("CMF_CUDA_INT8_CHAIN").ok().as_deref())?;
        let fused_ffn = ffn::Fusing::parse(std::env::var("CMF_CUDA_FFN_FUSED").ok().as_deref())?;
        let att_group_from = att_group::parse(std::env::var("CMF_CUDA_ATT_GROUP_FROM").ok().as_deref())?;
        for w in skip.warning().iter().chain(&switches.warning()) {
            eprintln!("cortiq: CUDA: {w}");
        }
        let (arch, src) = (format!("compute_{major}{minor}"), kernel_source(&switches.source_defines()));
        let cached = ptx_cache::cache_path(&crate::hub::cache_dir().join("cuda-kernels"), &src, &arch, ptx_cache::nvrtc_version());
        let hit = ptx_cache::read(&cached).and_then(|text| {
            let n = text.len();
            ctx.load_module(cudarc::nvrtc::Ptx::from_src(text)).ok().map(|m| (m, KernelCacheState::Loaded(cached.clone(), n)))
        });
        let (module, kernel_cache) = match hit {
            Some(hit) => hit,
            None => {
                // Tens of seconds on a first run (NVRTC, then the driver's own compile): say so.
                eprintln!("cortiq: compiling the CUDA kernels for {arch} (first use of this build; kept in {})", cached.parent().map_or(String::new(), |d| d.display().to_string()));
                let (ptx, state) = ptx_cache::compile_and_store(&src, &arch, cached)?;
                (ctx.load_module(ptx).map_err(err)?, state)
            }
        };
        // The static shared memory (block_sum's 32 floats, the argmax's 32 keys) comes out of
        // the same budget.
        let smem_limit = (ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).map_err(err)?.max(0) as usize).saturating_sub(512);
        let mut funcs = HashMap::new();
        for name in FIXED_KERNELS.into_iter().chain(top_k::KERNELS) {
            funcs.insert(name.to_string(), module.load_function(name).map_err(err)?);
        }
        for name in dynamic_smem_kernels() {
            let f = module.load_function(&name).map_err(err)?;
            f.set_attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_limit as i32).map_err(err)?;
            funcs.insert(name, f);
        }
        if major >= 9 {
            for name in cluster::KERNELS {
                let f = module.load_function(name).map_err(err)?;
                f.set_attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_limit.saturating_sub(cluster::STATIC_SMEM) as i32).map_err(err)?;
                f.set_attribute(F::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1).map_err(err)?;
                funcs.insert(name.to_string(), f);
            }
        }
        let sms = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(err)?.max(1) as u32;
        let total = ctx.total_mem().map_err(err)? as u64;
        let budget = crate::gpu::memory::weight_budget(std::env::var("CMF_GPU_BUDGET").ok().as_deref(), Some(total), WEIGHT_BUDGET_FRACTION)?.unwrap_or(total);
        let blas = blas::Blas::new(&stream);
        let readback = stream.fork().map_err(err)?;
        let hostprof = super::hostprof_level() > 0;
        let trace = Mutex::new(if switches.has("CORTIQ_TRACE") { Some(trace::Trace::open(module.clone())?) } else { None });
        let info = DeviceInfo { backend: "cuda", name: ctx.name().map_err(err)?, discrete: true, memory_bytes: total, f16: true, subgroups: true, matrix_units: true, max_binding_bytes: total, q8_activations: true, q8_matvec: true };
        Ok(CudaBackend { _ctx: ctx, stream, funcs, sms, occupancy: Mutex::new(HashMap::new()), weights: Mutex::new(HashMap::new()), graph: Mutex::new(None), mirrors: Mutex::new(HashMap::new()), spare_mirror: Mutex::new(None), profile: Mutex::new(Default::default()), uploaded: AtomicU64::new(0), resident: AtomicU64::new(0), budget, smem_limit, overlap: major >= 9, kernel_cache, skip, switches, blas, flash: !crate::gpu::selection::switched_off("CMF_CUDA_FLASH"), flash_split: !crate::gpu::selection::switched_off("CMF_CUDA_FLASH_SPLIT"), long_prefill_rows, readback, hostprof, int8_chain, cluster: cluster::enabled(), fused_ffn, att_group_from, trace, info })
    }

    /// This backend with the token graph's int8 chain set to `chain` (`CMF_CUDA_INT8_CHAIN`;
    /// the parity tests run every setting).
    pub fn with_int8_chain(mut self, chain: &str) -> Result<CudaBackend, String> {
        self.int8_chain = chain::Int8Chain::parse(Some(chain))?;
        Ok(self)
    }

    /// This backend with the token graph's layers as one cluster launch where the model and
    /// device allow it (`on`), or launched one by one (`CMF_CUDA_CLUSTER=1` turns it on; the
    /// parity tests run both paths).
    pub fn with_cluster(mut self, on: bool) -> CudaBackend {
        self.cluster = on;
        self
    }

    /// This backend with the token graph's FFN as one launch wherever the kernels can take it
    /// (`on`, as `CMF_CUDA_FFN_FUSED=1`), or gate/up and down launched apart (`CMF_CUDA_FFN_FUSED=0`;
    /// the parity tests run both paths).
    pub fn with_fused_ffn(mut self, on: bool) -> CudaBackend {
        self.fused_ffn = if on { ffn::Fusing::Always } else { ffn::Fusing::Never };
        self
    }

    /// This backend with decode attention by KV-head groups (heads of 64 or 80-128) from `positions`
    /// on (None: never; as `CMF_CUDA_ATT_GROUP_FROM`; the parity tests run both paths).
    pub fn with_attention_groups_from(mut self, positions: Option<usize>) -> CudaBackend {
        self.att_group_from = Some(positions.map_or(i32::MAX, |n| n.min(i32::MAX as usize) as i32));
        self
    }

    /// This backend with prompt chunks' attention in the FP32 tiles, the tensor-core kernels
    /// left out (as `CMF_CUDA_FLASH=0` does; the parity tests run both paths).
    pub fn without_flash(mut self) -> CudaBackend {
        self.flash = false;
        self
    }

    /// This backend with each prompt tile's tensor-core attention over all its keys in one
    /// block, never split into pieces (as `CMF_CUDA_FLASH_SPLIT=0` does; the parity tests run both).
    pub fn without_flash_split(mut self) -> CudaBackend {
        self.flash_split = false;
        self
    }

    /// This backend with the prefill graph on the int8 tensor-core GEMMs, cuBLAS left out
    /// (as `CMF_CUDA_CUBLAS=0` does; the parity tests run both paths).
    pub fn without_cublas(mut self) -> CudaBackend {
        self.blas = Err("left out by the caller".into());
        self
    }

    /// Make sure every weight is resident; `Ok(true)` when something was uploaded (cold).
    fn ensure(&self, ws: &[&WeightArg]) -> Result<bool, Unfit> {
        self.ensure_layout(ws, false)
    }

    /// `ensure` for the planar layout, or (`unit_major`) the unit-major one under its own key
    /// (`ffn::unit_major_key`).
    fn ensure_layout(&self, ws: &[&WeightArg], unit_major: bool) -> Result<bool, Unfit> {
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let mut cold = false;
        for w in ws {
            let fp = fingerprint(w.view.bytes);
            let key = if unit_major { ffn::unit_major_key(w.key) } else { w.key };
            if map.get(&key).is_some_and(|r| r.fingerprint == fp) {
                continue;
            }
            let v = &w.view;
            let p = layout::device_layout(v.codec, v.rows, v.cols, v.bytes, unit_major).map_err(|_| Unfit::Layout)?;
            let bytes = p.words.len() as u64 * 4;
            if self.resident.load(Ordering::SeqCst) + bytes > self.budget {
                return Err(Unfit::Budget);
            }
            let data = self.stream.clone_htod(bytemuck::cast_slice::<u32, u8>(&p.words)).map_err(|e| Unfit::Failed(err(e)))?;
            let a_off = i32::try_from(p.a).map_err(|_| Unfit::Failed("scale region offset beyond i32".into()))?;
            if let Some(old) = map.insert(key, Resident { data, a_off, fingerprint: fp }) {
                self.resident.fetch_sub(old.data.len() as u64, Ordering::SeqCst);
            }
            self.resident.fetch_add(bytes, Ordering::SeqCst);
            self.uploaded.fetch_add(bytes, Ordering::SeqCst);
            cold = true;
        }
        Ok(cold)
    }

    /// The launch of row kernel `name` over `rows` rows in groups of `r` (one warp each),
    /// staging `smem` bytes, for `batch` activation rows (or prefill tiles, `blockIdx.y`): a
    /// persistent grid of at most as many blocks as fit on the chip at once per row.
    pub(super) fn row_launch(&self, name: &str, rows: usize, r: usize, smem: usize, batch: usize) -> Result<(&CudaFunction, LaunchConfig), String> {
        let (f, cap) = self.row_blocks(name, smem)?;
        let needed = row_groups_blocks(rows, r) as u32;
        Ok((f, LaunchConfig { grid_dim: (needed.min(cap).max(1), batch as u32, 1), block_dim: (ROW_THREADS, 1, 1), shared_mem_bytes: smem as u32 }))
    }

    /// `row_launch` for a token-graph kernel of one activation row, with the shared memory
    /// that keeps its blocks spread (`spread_smem`).
    pub(super) fn spread_row_launch(&self, name: &str, rows: usize, r: usize, staged: usize) -> Result<(&CudaFunction, LaunchConfig), String> {
        let smem = self.spread_smem(name, staged, row_groups_blocks(rows, r))?;
        self.row_launch(name, rows, r, smem, 1)
    }

    /// The launch of row kernel `name` whose blocks take whole output units (`run_rows`'
    /// UNIT maps; the int8 chain's producers), `units` of them, staging `smem` bytes: as many
    /// blocks as fit the chip at once, every block the same number of units but the last, and
    /// shared memory that keeps them spread (`spread_smem`).
    pub(super) fn unit_launch(&self, name: &str, units: usize, smem: usize) -> Result<(&CudaFunction, LaunchConfig), String> {
        let (f, cap) = self.row_blocks(name, smem)?;
        let blocks = chain::unit_blocks(units, cap as usize);
        let smem = self.spread_smem(name, smem, blocks)?;
        Ok((f, LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (ROW_THREADS, 1, 1), shared_mem_bytes: smem as u32 }))
    }

    /// The fused FFN's launch (`ffn.rs`) of codec kind `kind` over `units` hidden units of 32
    /// and an activation row of `cols` values, and the units a block takes: the fewest units a
    /// block at which the grid fits the chip at once, spread as `unit_launch` spreads. None
    /// where no grid fits.
    pub(super) fn fused_ffn_launch(&self, kind: i32, units: usize, cols: usize) -> Result<Option<(&CudaFunction, LaunchConfig, usize)>, String> {
        let smem_of = |nu: usize| row_smem(kind, cols) + chain::image_bytes(32 * nu);
        let mut caps = HashMap::new();
        for nu in ffn::UNITS_PER_BLOCK {
            if smem_of(nu) <= self.smem_limit {
                caps.insert(nu, self.row_blocks(&ffn::kernel(kind, nu), smem_of(nu))?.1 as usize);
            }
        }
        let Some(nu) = ffn::units_per_block(units, |nu| caps.get(&nu).copied().unwrap_or(0)) else {
            return Ok(None);
        };
        let name = ffn::kernel(kind, nu);
        let smem = self.spread_smem(&name, smem_of(nu), units / nu)?;
        let f = self.funcs.get(&name).ok_or_else(|| format!("no kernel {name}"))?;
        Ok(Some((f, LaunchConfig { grid_dim: ((units / nu) as u32, 1, 1), block_dim: (ROW_THREADS, 1, 1), shared_mem_bytes: smem as u32 }, nu)))
    }

    /// Dynamic shared memory for a launch of `blocks` blocks of row kernel `name` that stages
    /// `staged` bytes: the least at which no SM takes more of them than the grid's even share
    /// (`spread.rs`).
    fn spread_smem(&self, name: &str, staged: usize, blocks: usize) -> Result<usize, String> {
        let per = spread::even_share(blocks, self.sms);
        spread::least_smem_for(per, staged, self.smem_limit, |smem| self.blocks_per_sm(name, smem))
    }

    /// Row kernel `name` and the most of its blocks (staging `smem` bytes) resident on the
    /// chip at once.
    fn row_blocks(&self, name: &str, smem: usize) -> Result<(&CudaFunction, u32), String> {
        let f = self.funcs.get(name).ok_or_else(|| format!("no kernel {name}"))?;
        Ok((f, self.blocks_per_sm(name, smem)? * self.sms))
    }

    /// Blocks of row kernel `name` that fit an SM with `smem` bytes of dynamic shared memory
    /// (at least 1; cached).
    fn blocks_per_sm(&self, name: &str, smem: usize) -> Result<u32, String> {
        let f = self.funcs.get(name).ok_or_else(|| format!("no kernel {name}"))?;
        let mut occ = self.occupancy.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&n) = occ.get(&(name.to_string(), smem as u32)) {
            return Ok(n);
        }
        let n = f.occupancy_max_active_blocks_per_multiprocessor(ROW_THREADS, smem, None).map_err(err)?.max(1);
        occ.insert((name.to_string(), smem as u32), n);
        Ok(n)
    }

    /// Queue y (batch, rows) = x (batch, cols) . W^T on the stream, treated as `how` says
    /// (several activation rows: the prefill tiles, which take no norm or argmax).
    fn launch_matvec(&self, w: &WeightArg, weights: &HashMap<u64, Resident>, x: &impl DevicePtr<f32>, y: &mut CudaSlice<f32>, batch: usize, how: MatvecHow) -> Result<(), String> {
        let kind = kind(w.view.codec).ok_or("codec has no CUDA kernel")?;
        let res = weights.get(&w.key).ok_or("weight not resident")?;
        if how.pending.is_some() && (batch != 1 || how.add) {
            return Err("a pending part is staged for one activation row, not added into".into());
        }
        if batch > 1 {
            if how.norm.is_some() || how.argmax.is_some() {
                return Err("a prefill tile takes no norm or argmax".into());
            }
            if batch >= MMA_MIN_ROWS && mma_fits(kind, w.view.cols, self.smem_limit) {
                let (rows, cols) = (w.view.rows, w.view.cols);
                let owned;
                let (xq, xd) = match how.quant {
                    Some(q) => q,
                    None => {
                        owned = (self.stream.alloc_zeros::<u8>(batch * cols).map_err(err)?, self.stream.alloc_zeros::<f32>(batch * cols / 16).map_err(err)?);
                        (&owned.0, &owned.1)
                    }
                };
                self.launch_quantize(x, None, cols, batch, (xq, xd), how.overlap)?;
                let s = &self.stream;
                let mut a = KernelArgs::default();
                a.buf(&res.data, s).int(res.a_off).buf(xq, s).buf(xd, s).buf(y, s).int(rows as i32).int(cols as i32).int(how.add as i32).int(batch as i32);
                // SAFETY: the kernel reads the resident planar weight (rows x cols), batch
                // rows of xq (cols bytes) and xd (cols / 16 floats), all written by the
                // quantize launch before it, and writes batch * rows floats of y.
                return unsafe { launch::launch(s, &self.funcs[&format!("mma_matmul_k{kind}")], self.mma_config(kind, rows, batch), &a, self.overlap) }.map_err(err);
            }
            let nb = matmul_tile(kind, w.view.cols, self.smem_limit);
            let (f, cfg) = self.row_launch(&row_kernel("matmul", kind, 2), w.view.rows, 2, tile_smem(kind, w.view.cols, nb), batch.div_ceil(nb))?;
            let s = &self.stream;
            let mut a = KernelArgs::default();
            a.buf(&res.data, s).int(res.a_off).buf(x, s).buf(y, s).int(w.view.rows as i32).int(w.view.cols as i32).int(how.add as i32).int(batch as i32).int(nb as i32);
            // SAFETY: the kernel reads the resident planar weight (rows x cols of its codec)
            // and batch * cols floats of x, and writes batch * rows floats of y, in tiles of
            // nb rows whose staging fits the shared memory asked for (`matmul_tile`).
            return unsafe { launch::launch(s, f, cfg, &a, how.overlap && self.overlap) }.map_err(err);
        }
        let r = matvec_rows_per_group(w.view.rows);
        // matvec_pend: x's pending part after x, and no `add`.
        let name = if how.pending.is_some() { "matvec_pend" } else { "matvec" };
        let (f, cfg) = self.row_launch(&row_kernel(name, kind, r), w.view.rows, r, row_smem(kind, w.view.cols), batch)?;
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(&res.data, s).int(res.a_off).buf(x, s);
        if let Some(xa) = how.pending {
            a.buf(xa, s);
        }
        match how.norm {
            Some((nw, _)) => a.buf(nw, s),
            None => a.null(),
        };
        a.float(how.norm.map_or(0.0, |n| n.1)).buf(y, s).int(w.view.rows as i32).int(w.view.cols as i32);
        if how.pending.is_none() {
            a.int(how.add as i32);
        }
        match how.argmax {
            Some(best) if batch == 1 => a.buf(best, s),
            Some(_) => return Err("an argmax is taken of one output row only".into()),
            None => a.null(),
        };
        // SAFETY: the kernel reads the resident planar weight (rows x cols of its codec),
        // batch * cols floats of x (and cols norm weights) and writes batch * rows floats of
        // y (and one u64 of the argmax; with a pending part, its cols + 1 words,
        // `ModelGraph::pending`); every buffer was sized for exactly that, and
        // `supported` checked that the staged row fits the shared memory granted at load time.
        unsafe { launch::launch(s, f, cfg, &a, how.overlap && self.overlap) }.map_err(err)
    }

    /// Queue xq (rows, cols) int8 and xd (rows, cols / 32, 2) = x quantized in 32-value
    /// groups (RMS-normed with `norm` first; per group its scale and scaled sum), the
    /// tensor-core GEMMs' input.
    fn launch_quantize(&self, x: &impl DevicePtr<f32>, norm: Option<(&CudaSlice<f32>, f32)>, cols: usize, rows: usize, (xq, xd): (&CudaSlice<u8>, &CudaSlice<f32>), overlap: bool) -> Result<(), String> {
        if xq.len() < rows * cols || xd.len() < rows * cols / 16 {
            return Err(format!("int8 scratch too small for {rows} x {cols}"));
        }
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(x, s);
        match norm {
            Some((nw, _)) => a.buf(nw, s),
            None => a.null(),
        };
        a.float(norm.map_or(0.0, |n| n.1)).int(cols as i32).buf(xq, s).buf(xd, s);
        let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (ROW_THREADS, 1, 1), shared_mem_bytes: staged_bytes(0, cols).next_multiple_of(16) as u32 };
        // SAFETY: the kernel reads rows * cols floats of x (and cols norm weights) and writes
        // rows * cols bytes of xq and rows * cols / 16 floats of xd (checked above); the
        // caller checked the staged row fits the shared memory (`mma_fits`).
        unsafe { launch::launch(s, &self.funcs["quantize_rows"], cfg, &a, overlap && self.overlap) }.map_err(err)
    }

    /// The grid of a tensor-core GEMM of codec kind `kind` over `total` logical weight rows
    /// and `n` activation rows: one block per 64 x 64 output tile, activation tiles fastest
    /// (the blocks that share a weight tile run side by side and read it once from memory).
    pub(super) fn mma_config(&self, kind: i32, total: usize, n: usize) -> LaunchConfig {
        LaunchConfig { grid_dim: (n.div_ceil(MMA_ROWS) as u32, total.div_ceil(MMA_ROWS) as u32, 1), block_dim: (MMA_THREADS, 1, 1), shared_mem_bytes: mma_smem(kind) as u32 }
    }

    /// Whether the kernels take these weights: a codec they decode with a planar layout,
    /// i32 shapes, and an activation row that fits shared memory.
    fn supported(&self, ws: &[&WeightArg]) -> bool {
        ws.iter().all(|w| {
            let v = &w.view;
            kind(v.codec).is_some_and(|k| row_smem(k, v.cols) <= self.smem_limit) && layout::supports(v.codec, v.cols) && v.rows < i32::MAX as usize && v.cols < i32::MAX as usize
        })
    }

    /// Run `body` (which queues work and returns host results); map errors to `Failed`.
    fn run(&self, ws: &[&WeightArg], body: impl FnOnce(&HashMap<u64, Resident>) -> Result<Vec<Vec<f32>>, String>, outs: &mut [&mut [f32]]) -> DeviceOutcome {
        if !self.supported(ws) {
            return DeviceOutcome::Declined("codec or shape without a CUDA kernel");
        }
        let cold = match self.ensure(ws) {
            Ok(c) => c,
            Err(u) => return u.outcome(false),
        };
        let map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        match body(&map) {
            Ok(results) => {
                for (o, r) in outs.iter_mut().zip(results) {
                    o.copy_from_slice(&r);
                }
                DeviceOutcome::Completed { cold }
            }
            Err(e) => DeviceOutcome::Failed(e),
        }
    }
}

impl Backend for CudaBackend {
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
        self.run(
            &ws,
            |map| {
                let x = self.stream.clone_htod(job.x).map_err(err)?;
                let mut ys = Vec::new();
                for w in &job.ws {
                    let mut y = self.stream.alloc_zeros::<f32>(job.batch * w.view.rows).map_err(err)?;
                    self.launch_matvec(w, map, &x, &mut y, job.batch, MatvecHow::default())?;
                    ys.push(y);
                }
                ys.iter().map(|y| self.stream.clone_dtoh(y).map_err(err)).collect()
            },
            outs,
        )
    }

    fn ffn(&self, job: &FfnJob, out: &mut [f32]) -> DeviceOutcome {
        let act = act_code(job.act);
        let ff = job.gate.view.rows;
        self.run(
            &[&job.gate, &job.up, &job.down],
            |map| {
                let x = self.stream.clone_htod(job.x).map_err(err)?;
                let mut g = self.stream.alloc_zeros::<f32>(job.batch * ff).map_err(err)?;
                let mut u = self.stream.alloc_zeros::<f32>(job.batch * ff).map_err(err)?;
                self.launch_matvec(&job.gate, map, &x, &mut g, job.batch, MatvecHow::default())?;
                self.launch_matvec(&job.up, map, &x, &mut u, job.batch, MatvecHow::default())?;
                let n = (job.batch * ff) as i32;
                let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                let mut b = self.stream.launch_builder(&self.funcs["act_mul"]);
                b.arg(&mut g).arg(&u).arg(&n).arg(&act);
                // SAFETY: g and u hold n floats each.
                unsafe { b.launch(cfg) }.map_err(err)?;
                let mut y = self.stream.alloc_zeros::<f32>(job.batch * job.down.view.rows).map_err(err)?;
                self.launch_matvec(&job.down, map, &g, &mut y, job.batch, MatvecHow::default())?;
                Ok(vec![self.stream.clone_dtoh(&y).map_err(err)?])
            },
            &mut [out],
        )
    }

    fn token_graph(&self, job: &TokenGraphJob, out: GraphReadback) -> DeviceOutcome {
        self.run_graph(job, out)
    }

    fn prefill_graph(&self, job: &PrefillGraphJob, out: GraphReadback) -> DeviceOutcome {
        self.run_prefill(job, out)
    }

    fn prefill_rows(&self, model: &crate::model::Llama) -> usize {
        self.prefill_capacity(model)
    }

    fn pull_kv(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        self.pull_rows(seq, from, to, host)
    }

    fn reset_sequence(&self, seq: u64) {
        // The spare it replaces is freed on the stream, so under the mirrors' lock: a graph
        // call holds it while it queues (or captures) work there.
        let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = mirrors.remove(&seq) {
            *self.spare_mirror.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
        }
    }

    fn upload_bandwidth(&self) -> Option<f64> {
        // 64 MiB through a pageable host buffer, timed around a synchronize; under the
        // weights' lock, which every job and graph call holds while it uses the stream.
        let host = vec![0x5Au8; 64 << 20];
        let _stream = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let t = std::time::Instant::now();
        let dev = self.stream.clone_htod(&host).ok()?;
        self.stream.synchronize().ok()?;
        let secs = t.elapsed().as_secs_f64();
        drop(dev);
        Some(host.len() as f64 / secs)
    }

    fn weight_budget(&self) -> u64 {
        self.budget
    }

    fn status_lines(&self) -> Vec<String> {
        let prompt = match &self.blas {
            Ok(_) => "cuBLAS f16 GEMMs behind a dequant step".to_string(),
            Err(why) => format!("int8 tensor-core GEMMs (cuBLAS: {why})"),
        };
        let chain = self.int8_chain.describe();
        let fused = match self.fused_ffn {
            ffn::Fusing::BySize => format!("where a layer's adds are at most {} (CMF_CUDA_FFN_FUSED)", ffn::MAX_ADDS),
            ffn::Fusing::Always => "wherever the kernels can (CMF_CUDA_FFN_FUSED=1)".to_string(),
            ffn::Fusing::Never => "never (CMF_CUDA_FFN_FUSED=0)".to_string(),
        };
        let mut lines = vec![format!("kernels: {}", self.kernel_cache), format!("prompt chunks: {prompt}"), format!("token graph int8 chain: {chain} (CMF_CUDA_INT8_CHAIN)"), format!("token graph FFN as one launch: {fused}"), format!("decode attention by KV-head groups: {}", att_group::describe(self.att_group_from, self.sms))];
        lines.extend(self.skip.warning());
        lines.extend(self.switches.warning());
        lines
    }

    fn graph_profile(&self) -> Option<super::backend::GraphProfile> {
        Some(self.profile.lock().unwrap_or_else(|e| e.into_inner()).clone())
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
    use super::kernel_source;
    use cudarc::nvrtc::result::{compile_program, create_program, destroy_program, get_program_log, get_ptx};
    use cudarc::nvrtc::sys::{nvrtcGetCUBIN, nvrtcGetCUBINSize, nvrtcProgram};

    /// The machine code NVRTC made for a real architecture.
    unsafe fn cubin(prog: nvrtcProgram) -> Vec<u8> {
        let mut size = 0usize;
        // SAFETY (both calls): prog compiled for a real architecture; the buffer holds size bytes.
        assert_eq!(unsafe { nvrtcGetCUBINSize(prog, &mut size) }, cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS);
        let mut bytes = vec![0u8; size];
        assert_eq!(unsafe { nvrtcGetCUBIN(prog, bytes.as_mut_ptr().cast()) }, cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS);
        bytes
    }

    /// The SASS lines of `sass` (cuobjdump -sass) where an LDGSTS (cp.async) addresses shared
    /// memory through a uniform register, each with its kernel's name. CUDA 13.0's ptxas
    /// (NVRTC 13.0, the driver 580 JIT) emits that form with uniform registers nothing writes
    /// (session 51: qkv_rope_tile_k7_r2 died with CUDA_ERROR_ILLEGAL_INSTRUCTION on one).
    fn uniform_offset_cp_async(sass: &str) -> Vec<String> {
        let mut kernel = "";
        let mut found = Vec::new();
        for line in sass.lines() {
            if let Some(name) = line.trim().strip_prefix("Function : ") {
                kernel = name;
            } else if line.contains("LDGSTS") && line.split('[').nth(1).is_some_and(|addr| addr.contains("+UR")) {
                found.push(format!("{kernel}: {}", line.trim()));
            }
        }
        found
    }

    #[test]
    fn uniform_offset_cp_async_is_found_in_sass() {
        let sass = "\t\tFunction : qkv_rope_tile_k7_r2\n        /*1dc0*/   LDGSTS.E [R5+UR0], desc[UR1][R12.64] ;\n        /*1e40*/   LDGSTS.E.BYPASS.128 [R0+0x1000], desc[UR4][R12.64] ;\n\t\tFunction : matvec_k0_r1\n        /*0100*/   LDGSTS.E [R7], desc[UR4][R4.64] ;\n";
        assert_eq!(uniform_offset_cp_async(sass), vec!["qkv_rope_tile_k7_r2: /*1dc0*/   LDGSTS.E [R5+UR0], desc[UR1][R12.64] ;".to_string()]);
    }

    /// The kernel module compiles to machine code (NVRTC runs ptxas for a real architecture,
    /// so inline PTX such as mma.sync and cp.async is checked too) for the oldest and the
    /// newest architecture the backend serves, and defines every kernel the backend loads by
    /// name. Needs only libnvrtc, no GPU: `.ci/run` installs it from PyPI; without it the
    /// test says so and passes. With NVRTC 13.0 and CORTIQ_CUOBJDUMP naming cuobjdump
    /// (`.ci/run` installs both), the sm_90 machine code holds no cp.async through a uniform
    /// register (`uniform_offset_cp_async`).
    #[test]
    fn kernels_compile_for_ampere_and_hopper() {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("SKIP kernels_compile_for_ampere_and_hopper: libnvrtc not found (LD_LIBRARY_PATH; .ci/run installs it)");
            return;
        }
        let plain = kernel_source("");
        let switched = kernel_source(&super::anatomy::KernelSwitches::parse(Some(&super::anatomy::DEFINES.join(","))).unwrap().source_defines());
        for (arch, src, check_sass) in [("sm_80", &plain, false), ("sm_90", &plain, true), ("sm_90", &switched, false)] {
            let src = std::ffi::CString::new(src.as_str()).expect("kernel source has no NUL");
            let prog = create_program(&src, None).expect("nvrtcCreateProgram");
            // SAFETY: prog was just created and is destroyed once, below.
            let compiled = unsafe { compile_program(prog, &[format!("--gpu-architecture={arch}")]) };
            let text = |chars: Vec<std::ffi::c_char>| chars.iter().map(|&c| c as u8 as char).collect::<String>();
            let log = unsafe { get_program_log(prog) }.map(text).unwrap_or_default();
            let ptx = unsafe { get_ptx(prog) }.map(text).unwrap_or_default();
            let machine_code = (compiled.is_ok() && check_sass).then(|| unsafe { cubin(prog) });
            unsafe { destroy_program(prog) }.expect("nvrtcDestroyProgram");
            assert!(compiled.is_ok(), "NVRTC for {arch}: {compiled:?}\n{log}");
            if let Some(code) = machine_code {
                check_cp_async_addressing(&code);
            }
            let cluster = if arch == "sm_90" { &super::cluster::KERNELS[..] } else { &[] };
            let loaded = super::FIXED_KERNELS.iter().chain(super::top_k::KERNELS.iter()).chain(cluster).map(|n| n.to_string()).chain(super::dynamic_smem_kernels());
            for name in loaded {
                assert!(ptx.contains(&format!(".entry {name}(")), "{arch}: the backend loads kernel {name}, which the module does not define");
            }
        }
    }

    /// Disassembles `code` (NVRTC 13.0's) with $CORTIQ_CUOBJDUMP and fails on
    /// `uniform_offset_cp_async` lines.
    fn check_cp_async_addressing(code: &[u8]) {
        let nvrtc = super::ptx_cache::nvrtc_version();
        if nvrtc != (13, 0) {
            eprintln!("SKIP kernels_compile_for_ampere_and_hopper's SASS check: it is for CUDA 13.0's ptxas, this NVRTC is {}.{} (.ci/run installs 13.0)", nvrtc.0, nvrtc.1);
            return;
        }
        let Some(tool) = std::env::var_os("CORTIQ_CUOBJDUMP") else {
            eprintln!("SKIP kernels_compile_for_ampere_and_hopper's SASS check: CORTIQ_CUOBJDUMP unset (.ci/run sets it)");
            return;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kernels.cubin");
        std::fs::write(&path, code).expect("write cubin");
        let out = std::process::Command::new(&tool).arg("-sass").arg(&path).output().expect("run cuobjdump");
        assert!(out.status.success(), "cuobjdump -sass: {}", String::from_utf8_lossy(&out.stderr));
        let sass = String::from_utf8_lossy(&out.stdout);
        assert!(sass.contains("LDGSTS"), "cuobjdump -sass printed no cp.async at all");
        let bad = uniform_offset_cp_async(&sass);
        assert!(bad.is_empty(), "cp.async through a uniform register (miscompiled by CUDA 13.0's ptxas; reshape the copy's code):\n{}", bad.join("\n"));
    }
}
