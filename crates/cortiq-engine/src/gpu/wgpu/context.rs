//! One wgpu adapter brought up: device and queue with the adapter's own limits, the compiled
//! pipelines (through the driver pipeline cache persisted in the cache dir), the weight
//! budget, readback and the upload-bandwidth probe.

use super::adapter::{self, AdapterDesc, AdapterKind};
use super::q8_out::{self, Q8Out, UnitShape};
use super::multi;
use super::qkv_attn;
use crate::gpu::backend::DeviceInfo;
use cortiq_core::Codec;
use std::collections::HashMap;
use std::path::PathBuf;

pub(super) const WEIGHTS_IO: &str = include_str!("kernels/weights_io.wgsl");
const MATVEC: &str = include_str!("kernels/matvec.wgsl");
pub(super) const CODECS: &str = include_str!("kernels/codecs.wgsl");
pub(super) const CODECS_Q8: &str = include_str!("kernels/codecs_q8.wgsl");
const GEMM: &str = include_str!("kernels/gemm.wgsl");
const GEMM_Q8: &str = include_str!("kernels/gemm_q8.wgsl");
const GEMM_COOP: &str = include_str!("kernels/gemm_coop.wgsl");
const CODECS_COOP: &str = include_str!("kernels/codecs_coop.wgsl");
const GEMM_STORE: &str = include_str!("kernels/gemm_store.wgsl");
const SLICES: &str = include_str!("kernels/slices.wgsl");
const EMBED: &str = include_str!("kernels/embed.wgsl");
const REDUCE_SHARED: &str = include_str!("kernels/reduce_shared.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("kernels/reduce_subgroup.wgsl");
const ACT: &str = include_str!("kernels/act.wgsl");
const NORM_PARAMS: &str = include_str!("kernels/norm_params.wgsl");
const NORM: &str = include_str!("kernels/norm.wgsl");
const POST_NORM: &str = include_str!("kernels/post_norm.wgsl");
const QUANT: &str = include_str!("kernels/quant.wgsl");
const F16_GUARD_WGSL: &str = include_str!("kernels/f16_guard.wgsl");

/// f16_guard.wgsl's bound (`F16_GUARD`): f16's largest finite value less 32 (about one part
/// in 2048 of it).
pub(super) const F16_GUARD: f32 = 65472.0;
pub(super) const QUANT_UNIT: &str = include_str!("kernels/quant_unit.wgsl");

/// The activation quantizer's shader: its body, the unit rule and the workgroup sum (by
/// subgroup operations where the adapter has them).
fn quant_source(subgroups: bool) -> String {
    with_reduce(&format!("{QUANT}{QUANT_UNIT}"), reduce_source(subgroups)).replace("GUARD_UNIT", "")
}

/// The quantizer with SPEC section 6's f16 guard over every unit's values (f16_guard.wgsl:
/// `bad` at binding 4, the uniform block moved to 5), for the prompt GEMMs on the matrix
/// units.
fn quant_guarded_source(subgroups: bool) -> String {
    let checks = (0..8).map(|i| format!("guard4(v{i});")).collect::<Vec<_>>().join(" ");
    let body = with_reduce(&format!("{QUANT}{QUANT_UNIT}{F16_GUARD_WGSL}"), reduce_source(subgroups)).replace("GUARD_UNIT", &checks);
    body.replace(
        "@group(0) @binding(4) var<uniform> qp: QuantParams;",
        "@group(0) @binding(4) var<storage, read_write> bad: array<u32>; // (1) the f16 guard\n@group(0) @binding(5) var<uniform> qp: QuantParams;",
    )
}

/// The norm step's shader: its body and the workgroup sum (by subgroup operations where the
/// adapter has them).
fn norm_source(subgroups: bool) -> String {
    with_reduce(&format!("{NORM_PARAMS}{NORM}"), reduce_source(subgroups))
}

/// The sandwich norm step's shader (post_norm.wgsl) with its workgroup sum.
fn post_norm_source(subgroups: bool) -> String {
    with_reduce(&format!("{NORM_PARAMS}{POST_NORM}"), reduce_source(subgroups))
}
const STEP: &str = include_str!("kernels/step.wgsl");
const ROPE_STORE: &str = include_str!("kernels/rope_store.wgsl");
const ATTN_SPLIT: &str = include_str!("kernels/attn_split.wgsl");
const ATTN_COMBINE: &str = include_str!("kernels/attn_combine.wgsl");
const ATTN_COMBINE_Q8: &str = include_str!("kernels/attn_combine_q8.wgsl");
const ATTN_MERGE: &str = include_str!("kernels/attn_merge.wgsl");
const ATTN_ROWS: &str = include_str!("kernels/attn_rows.wgsl");
const ATTN_COOP: &str = include_str!("kernels/attn_coop.wgsl");
const ATTN_CHUNK: &str = include_str!("kernels/attn_chunk.wgsl");
const ATTN_PARTIAL: &str = include_str!("kernels/attn_partial.wgsl");
const ATTN_QKV: &str = include_str!("kernels/attn_qkv.wgsl");
const ROPE_HEAD: &str = include_str!("kernels/rope_head.wgsl");
const NORM_ROPE: &str = include_str!("kernels/norm_rope.wgsl");
const ATTN_REDUCE_SHARED: &str = include_str!("kernels/attn_reduce_shared.wgsl");
const ATTN_REDUCE_SUBGROUP: &str = include_str!("kernels/attn_reduce_subgroup.wgsl");
const ARGMAX: &str = include_str!("kernels/argmax.wgsl");
const ARGMAX_MERGE: &str = include_str!("kernels/argmax_merge.wgsl");
const ARGMAX_PICK: &str = include_str!("kernels/argmax_pick.wgsl");
const TOPK_KEYS: &str = include_str!("kernels/topk_keys.wgsl");
const TOPK_REDUCE_SHARED: &str = include_str!("kernels/topk_reduce_shared.wgsl");
const TOPK_REDUCE_SUBGROUP: &str = include_str!("kernels/topk_reduce_subgroup.wgsl");
const TOPK_GROUPS: &str = include_str!("kernels/topk_groups.wgsl");
const TOPK_MERGE: &str = include_str!("kernels/topk_merge.wgsl");
const TOPK_DRAW: &str = include_str!("kernels/topk_draw.wgsl");

/// The codecs with a matvec pipeline: (codec, `unit_dot_*` suffix, x vec4s per unit).
pub(super) const MATVEC_CODECS: [(Codec, &str, u32); 11] = [
    (Codec::Q4_0, "q4_0", 8),
    (Codec::Q4Tiled, "q4_0", 8),
    (Codec::Q4_1, "q4_1", 8),
    (Codec::Q5_1, "q5_1", 8),
    (Codec::Q8_0, "q8_0", 8),
    (Codec::Q8Row, "q8_row", 4),
    (Codec::F16, "f16", 2),
    (Codec::F32, "f32", 1),
    (Codec::Q4K, "q4_k", 8),
    (Codec::Q5K, "q5_k", 8),
    (Codec::Q6K, "q6_k", 8),
];

/// What happened to the driver pipeline cache this process (reported by `cortiq gpu`).
#[derive(Debug, Clone, PartialEq)]
pub enum PipelineCacheState {
    /// The adapter has no pipeline cache (only Vulkan has one in wgpu).
    Unsupported,
    /// Loaded from the file (bytes); pipelines did not recompile from scratch.
    Loaded(PathBuf, usize),
    /// No usable file: compiled, and the cache written there (bytes).
    Written(PathBuf, usize),
    /// Compiled, but the cache could not be written (the reason).
    NotWritten(PathBuf, String),
}

impl std::fmt::Display for PipelineCacheState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PipelineCacheState::Unsupported => write!(f, "not supported by this adapter"),
            PipelineCacheState::Loaded(p, n) => write!(f, "loaded {n} bytes from {}", p.display()),
            PipelineCacheState::Written(p, n) => write!(f, "compiled; {n} bytes written to {}", p.display()),
            PipelineCacheState::NotWritten(p, e) => write!(f, "compiled; could not write {} ({e})", p.display()),
        }
    }
}

/// Matvec pipelines by (codec, matrix class, variant), each with its workgroup shape.
type MatvecPipelines = HashMap<(Codec, MatrixClass, Variant), (wgpu::ComputePipeline, MatvecShape)>;

/// Multi-matrix matvec pipelines by (codec, matrices, class of the tallest, variant).
type MultiPipelines = HashMap<(Codec, usize, MatrixClass, Variant), (wgpu::ComputePipeline, MatvecShape)>;

/// GEMM pipelines by (codec, int8 activations, on matrix units), each with its tile's
/// (weight rows, batch columns).
type GemmPipelines = HashMap<(Codec, bool, bool), (wgpu::ComputePipeline, (u32, u32))>;

/// The kernel of a prompt chunk's attention (`WgpuContext::prompt_attention`): its query rows
/// a workgroup, and whether it rounds q to f16 on the matrix units, binding the f16 guard's
/// word after its output.
pub struct PromptAttention {
    pub pipe: wgpu::ComputePipeline,
    pub rows: u32,
    pub guarded: bool,
}

/// Where a pipeline cache lives on disk and the bytes read from it, if any.
type CacheFile = (PathBuf, Option<Vec<u8>>);

pub struct WgpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// Matvec pipelines, built on first use.
    matvec: std::sync::Mutex<MatvecPipelines>,
    matvec_layout: wgpu::BindGroupLayout,
    /// Multi-matrix matvec pipelines (`multi.rs`), built on first use, and their bind group
    /// layouts by matrix count (2..=MAX_MATRICES; none where the adapter binds too few
    /// storage buffers).
    multi: std::sync::Mutex<MultiPipelines>,
    multi_layouts: Vec<Option<wgpu::BindGroupLayout>>,
    /// The int8 graph's unit-writing matvec pipelines by codec, kind and workgroup shape
    /// (`q8_out.rs`), built on first use, and their bind group layouts (gate/up, residual;
    /// none where the adapter binds too few storage buffers).
    q8_out: std::sync::Mutex<HashMap<(Codec, Q8Out, UnitShape), wgpu::ComputePipeline>>,
    q8_out_layouts: Option<[wgpu::BindGroupLayout; 2]>,
    /// The int8 graph's split attention with its own QKV (`qkv_attn.rs`) by codec and head
    /// size, built on first use, and its bind group layout (none where the adapter binds too few storage
    /// buffers).
    attn_qkv: std::sync::Mutex<HashMap<(Codec, u32), wgpu::ComputePipeline>>,
    attn_qkv_layout: Option<wgpu::BindGroupLayout>,
    /// GEMM pipelines by codec, whether they take int8 activations and whether they run on
    /// matrix units, with their tiles, built on first use (same bindings as the matvec).
    gemm: std::sync::Mutex<GemmPipelines>,
    /// Embedding-row decoders by codec, built on first use (same bindings as the matvec).
    embed: std::sync::Mutex<HashMap<Codec, wgpu::ComputePipeline>>,
    subgroups: bool,
    /// The int8-activation GEMMs and the prompt attention run on the adapter's matrix units
    /// (`gemm_coop.wgsl`, `attn_coop.wgsl`), and whether the device was opened with them.
    matrix_units: bool,
    matrix_units_opened: bool,
    /// The matrix-unit GEMM's workgroup tile (`CMF_WGPU_COOP_TILE`) and stage
    /// (`CMF_WGPU_COOP_STAGE`).
    coop_tile: CoopTile,
    coop_stage: CoopStage,
    pipeline_cache: Option<wgpu::PipelineCache>,
    pub act: wgpu::ComputePipeline,
    /// The token graph's kernels.
    pub norm: wgpu::ComputePipeline,
    /// Gemma 3's sandwich norm step (`graph/gemma.rs`).
    pub post_norm: wgpu::ComputePipeline,
    /// One activation row to int8 per 32 values (quant.wgsl) for the int8-activation matvecs.
    pub quant: wgpu::ComputePipeline,
    /// The same with the f16 guard, for the GEMMs on the matrix units (built on first use:
    /// `quant_guarded`).
    quant_guarded: std::sync::OnceLock<Result<wgpu::ComputePipeline, String>>,
    pub rope_store: wgpu::ComputePipeline,
    /// Gemma 3's q/k head norms, RoPE and mirror append in one dispatch (`graph/gemma.rs`).
    pub norm_rope: wgpu::ComputePipeline,
    pub attn_split: wgpu::ComputePipeline,
    /// Gemma 3's split with the q/k head norms before its RoPE and append (`graph/gemma.rs`).
    pub attn_split_normed: wgpu::ComputePipeline,
    pub attn_combine: wgpu::ComputePipeline,
    /// The combine writing an int8-activation matvec's input (attn_combine_q8.wgsl).
    pub attn_combine_q8: wgpu::ComputePipeline,
    /// The prefill graph's causal attention of a chunk's rows.
    pub attn_rows: wgpu::ComputePipeline,
    /// The layout of the prompt attention on the matrix units (attn_rows' and the f16 guard's
    /// word).
    attn_coop_layout: wgpu::BindGroupLayout,
    /// The prompt attention on the matrix units by head size (None: its build failed), and
    /// the subgroups a workgroup (`CMF_WGPU_ATTN_SUBGROUPS`; 0: `attn_rows` instead).
    attn_coop: std::sync::Mutex<HashMap<u32, Option<wgpu::ComputePipeline>>>,
    attn_coop_subgroups: u32,
    /// The token graph's greedy pick over the logits.
    /// The greedy pick: per 4096 logits a candidate (argmax.wgsl), then the best of them
    /// (argmax_merge.wgsl).
    pub argmax: wgpu::ComputePipeline,
    pub argmax_merge: wgpu::ComputePipeline,
    /// The sampler's candidates over the logits: per workgroup, then merged, and the sampled
    /// token drawn from them (`top_k.rs`).
    pub topk_groups: wgpu::ComputePipeline,
    pub topk_merge: wgpu::ComputePipeline,
    pub info: DeviceInfo,
    /// Weight budget in bytes.
    pub budget: u64,
    /// Largest storage binding (and buffer) in bytes.
    pub max_binding: u64,
    pub cache_state: PipelineCacheState,
}

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::PRIMARY;
    wgpu::Instance::new(desc)
}

fn describe(a: &wgpu::Adapter) -> AdapterDesc {
    let i = a.get_info();
    let kind = match i.device_type {
        wgpu::DeviceType::DiscreteGpu => AdapterKind::Discrete,
        wgpu::DeviceType::IntegratedGpu => AdapterKind::Integrated,
        wgpu::DeviceType::VirtualGpu => AdapterKind::Virtual,
        wgpu::DeviceType::Cpu => AdapterKind::Cpu,
        wgpu::DeviceType::Other => AdapterKind::Other,
    };
    AdapterDesc { name: i.name, kind }
}

/// Every adapter of the primary APIs, with its API's name.
pub fn adapter_list() -> Vec<(AdapterDesc, String)> {
    pollster::block_on(instance().enumerate_adapters(wgpu::Backends::PRIMARY)).iter().map(|a| (describe(a), format!("{:?}", a.get_info().backend))).collect()
}

/// Device-local memory of a Vulkan adapter, summed over its device-local heaps.
#[cfg(any(target_os = "linux", target_os = "windows", target_os = "android"))]
fn device_memory(a: &wgpu::Adapter) -> Option<u64> {
    // SAFETY: the hal adapter is only borrowed to query memory properties, which has no
    // side effects; the guard keeps the wgpu adapter alive meanwhile.
    let hal = unsafe { a.as_hal::<wgpu::hal::api::Vulkan>() }?;
    let inst = hal.shared_instance().raw_instance();
    // SAFETY: the physical device handle belongs to this instance.
    let props = unsafe { inst.get_physical_device_memory_properties(hal.raw_physical_device()) };
    let heaps = &props.memory_heaps[..props.memory_heap_count as usize];
    let local: u64 = heaps.iter().filter(|h| h.flags.contains(ash::vk::MemoryHeapFlags::DEVICE_LOCAL)).map(|h| h.size).sum();
    (local > 0).then_some(local)
}

#[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "android")))]
fn device_memory(_a: &wgpu::Adapter) -> Option<u64> {
    None
}

/// Weight budget assumed when the device reports no memory size and none is configured.
const FALLBACK_BUDGET: u64 = 4 << 30;
/// Fraction of device-local memory weights may occupy by default (the rest: activations,
/// KV mirrors, the driver).
const WEIGHT_BUDGET_FRACTION: f64 = 0.8;

impl WgpuContext {
    /// Open the chosen adapter and build every pipeline; `binding_cap` lowers the largest
    /// binding below the adapter's (tests use it to exercise the row split).
    pub fn open(pin: Option<&str>, budget_setting: Option<&str>, binding_cap: Option<u64>) -> Result<WgpuContext, String> {
        let inst = instance();
        let adapters = pollster::block_on(inst.enumerate_adapters(wgpu::Backends::PRIMARY));
        let descs: Vec<AdapterDesc> = adapters.iter().map(describe).collect();
        let adapter = &adapters[adapter::choose(&descs, pin)?];
        let desc = describe(adapter);
        let mut wanted = wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16 | wgpu::Features::PIPELINE_CACHE | wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        if crate::gpu::selection::switched_off("CMF_WGPU_SUBGROUPS") {
            // Forces the portable shared-memory reduction (to test that path on any adapter).
            wanted.remove(wgpu::Features::SUBGROUP);
        }
        let coop_tile = coop_tile(std::env::var("CMF_WGPU_COOP_TILE").ok().as_deref())?;
        let coop_stage = coop_stage(std::env::var("CMF_WGPU_COOP_STAGE").ok().as_deref())?;
        let coop = matrix_units_wanted(std::env::var("CMF_WGPU_MATRIX_UNITS").ok().as_deref(), matrix_units_offered(adapter), &desc.name)?;
        if coop {
            wanted |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        let mut features = adapter.features() & wanted;
        let matrix_units = coop && features.contains(wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        if !matrix_units {
            features.remove(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        }
        let limits = adapter.limits();
        let experimental = if matrix_units {
            // SAFETY: the one experimental feature asked for is cooperative matrices, used only
            // by gemm_coop.wgsl and attn_coop.wgsl in the configuration the adapter reported
            // (16 x 16 x 16, f16 inputs, f32 sums, subgroups of 32), whose results the parity
            // tests check against the CPU path and an exact softmax on the device.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("cortiq"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: experimental,
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| format!("request_device: {e}"))?;
        // Device errors are caught per job by error scopes; anything else is logged, not a panic.
        device.on_uncaptured_error(std::sync::Arc::new(|e: wgpu::Error| eprintln!("cortiq: wgpu error outside a job: {e}")));
        let memory = device_memory(adapter);
        let budget = crate::gpu::memory::weight_budget(budget_setting, memory, WEIGHT_BUDGET_FRACTION)?.unwrap_or(FALLBACK_BUDGET);
        let max_binding = (limits.max_storage_buffer_binding_size as u64).min(limits.max_buffer_size).min(binding_cap.unwrap_or(u64::MAX)) & !255;
        let subgroups = features.contains(wgpu::Features::SUBGROUP);
        let info = DeviceInfo {
            backend: "wgpu",
            name: desc.name.clone(),
            discrete: desc.kind == AdapterKind::Discrete,
            memory_bytes: match desc.kind {
                AdapterKind::Discrete => memory.unwrap_or(budget),
                _ => u64::MAX,
            },
            f16: features.contains(wgpu::Features::SHADER_F16),
            subgroups,
            matrix_units,
            max_binding_bytes: max_binding,
            q8_activations: false,
            // Packed 4x8 integer dot products are instructions on Vulkan 1.3 and D3D12 (SM 6.4)
            // devices; elsewhere naga emulates them, slower than the f32 kernels.
            q8_matvec: matches!(adapter.get_info().backend, wgpu::Backend::Vulkan | wgpu::Backend::Dx12),
        };
        let (cache, cache_path) = open_cache(&device, adapter, features);
        use wgpu::BufferBindingType::{Storage, Uniform};
        let (r, w) = (Storage { read_only: true }, Storage { read_only: false });
        let matvec_layout = layout(&device, &[r, r, r, r, w, Uniform]);
        let multi_layouts = (0..=multi::MAX_MATRICES)
            .map(|n| {
                let kinds: Vec<_> = std::iter::repeat_n(r, 2 * n + 2).chain(std::iter::repeat_n(w, n)).chain([Uniform]).collect();
                (n >= 2 && multi::storage_bindings(n) <= limits.max_storage_buffers_per_shader_stage).then(|| layout(&device, &kinds))
            })
            .collect();
        let q8_out_layouts = (q8_out::STORAGE_BINDINGS <= limits.max_storage_buffers_per_shader_stage).then(|| [layout(&device, &[r, r, r, r, r, r, w, w, Uniform]), layout(&device, &[r, r, r, r, w, w, w, r, Uniform])]);
        let attn_qkv_layout = (qkv_attn::STORAGE_BINDINGS <= limits.max_storage_buffers_per_shader_stage).then(|| layout(&device, &[r, r, r, r, r, r, r, r, w, w, w, Uniform, Uniform]));
        let act_layout = layout(&device, &[w, r, Uniform]);
        let act = build(&device, ACT, &act_layout, cache.as_ref(), "act")?;
        let norm = build(&device, &norm_source(subgroups), &layout(&device, &[w, r, r, w, Uniform]), cache.as_ref(), "norm")?;
        let post_norm = build(&device, &post_norm_source(subgroups), &layout(&device, &[w, r, r, r, w, Uniform]), cache.as_ref(), "post_norm")?;
        let quant = build(&device, &quant_source(subgroups), &layout(&device, &[r, r, w, w, Uniform]), cache.as_ref(), "quant")?;
        let attn_coop_layout = layout(&device, &[r, r, r, w, w, Uniform]);
        let rope_store = build(&device, &format!("{STEP}{ROPE_STORE}"), &layout(&device, &[w, r, r, w, w, Uniform]), cache.as_ref(), "rope_store")?;
        let norm_rope = build(&device, &norm_rope_source(subgroups), &layout(&device, &[w, r, r, w, w, r, r, Uniform]), cache.as_ref(), "norm_rope")?;
        let attn_split = build(&device, &attn_split_source(subgroups), &layout(&device, &[r, r, r, w, w, w, Uniform]), cache.as_ref(), "attn_split")?;
        let attn_split_normed = build(&device, &attn_split_normed_source(subgroups), &layout(&device, &[r, r, r, w, w, w, r, r, Uniform]), cache.as_ref(), "attn_split_normed")?;
        let attn_combine = build(&device, &format!("{STEP}{ATTN_MERGE}{ATTN_COMBINE}"), &layout(&device, &[r, w, Uniform]), cache.as_ref(), "attn_combine")?;
        let attn_combine_q8 = build(&device, &format!("{STEP}{ATTN_MERGE}{ATTN_COMBINE_Q8}{QUANT_UNIT}"), &layout(&device, &[r, w, w, Uniform]), cache.as_ref(), "attn_combine_q8")?;
        let attn_rows = build(&device, &attn_chunk_source(ATTN_ROWS, subgroups), &layout(&device, &[r, r, r, w, Uniform]), cache.as_ref(), "attn_rows")?;
        let attn_coop_subgroups = attn_coop_subgroups(std::env::var("CMF_WGPU_ATTN_SUBGROUPS").ok().as_deref())?;
        let argmax = build(&device, &format!("{ARGMAX_PICK}{ARGMAX}"), &layout(&device, &[r, w, Uniform]), cache.as_ref(), "argmax")?;
        let argmax_merge = build(&device, &format!("{ARGMAX_PICK}{ARGMAX_MERGE}"), &layout(&device, &[r, w, Uniform]), cache.as_ref(), "argmax_merge")?;
        let topk_groups = build(&device, &format!("{TOPK_KEYS}{TOPK_GROUPS}"), &layout(&device, &[r, w, Uniform]), cache.as_ref(), "topk_groups")?;
        let topk_merge = build(&device, &topk_merge_source(subgroups), &layout(&device, &[r, w, Uniform, w, Uniform]), cache.as_ref(), "topk_merge")?;
        let mut ctx = WgpuContext { device, queue, matvec: Default::default(), matvec_layout, multi: Default::default(), multi_layouts, q8_out: Default::default(), q8_out_layouts, attn_qkv: Default::default(), attn_qkv_layout, gemm: Default::default(), embed: Default::default(), subgroups, matrix_units, matrix_units_opened: matrix_units, coop_tile, coop_stage, pipeline_cache: cache, act, norm, post_norm, quant, quant_guarded: Default::default(), rope_store, norm_rope, attn_split, attn_split_normed, attn_combine, attn_combine_q8, attn_rows, attn_coop_layout, attn_coop: Default::default(), attn_coop_subgroups, argmax, argmax_merge, topk_groups, topk_merge, info, budget, max_binding, cache_state: PipelineCacheState::Unsupported };
        // The per-op kernels up front (a job's first call should not pay a compile).
        for (codec, _, _) in MATVEC_CODECS {
            for (rows, cols) in [(1, 1), (TALL_ROWS, 1), (WIDE_ROWS, WIDE_COLS)] {
                ctx.matvec_pipeline(codec, rows, cols, Variant::PLAIN)?;
            }
        }
        if let (Some(c), Some((path, loaded))) = (&ctx.pipeline_cache, cache_path) {
            ctx.cache_state = persist(c, path, loaded);
        }
        Ok(ctx)
    }

    /// The matvec pipeline (built on first use) and workgroup shape for a matrix of `rows`
    /// rows and `cols` columns of this codec, in this variant.
    pub fn matvec_pipeline(&self, codec: Codec, rows: u32, cols: u32, variant: Variant) -> Result<(wgpu::ComputePipeline, MatvecShape), String> {
        let class = MatrixClass::of(rows, cols);
        let mut map = self.matvec.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = map.get(&(codec, class, variant)) {
            return Ok(found.clone());
        }
        let (_, suffix, vec4s) = MATVEC_CODECS.into_iter().find(|(c, _, _)| *c == codec).ok_or_else(|| format!("no matvec kernel for {codec}"))?;
        if variant.x.int8() && !Q8_CODECS.contains(&codec) {
            return Err(format!("no int8-activation matvec kernel for {codec}"));
        }
        let shape = MatvecShape::from_env(class);
        let src = matvec_source(suffix, vec4s, self.subgroups, shape, variant);
        let built = (build(&self.device, &src, &self.matvec_layout, self.pipeline_cache.as_ref(), &format!("matvec {suffix}"))?, shape);
        map.insert((codec, class, variant), built.clone());
        Ok(built)
    }

    /// The pipeline (built on first use) and workgroup shape of one dispatch over `n`
    /// matrices of this codec (`multi.rs`), the tallest `rows` rows, `cols` columns.
    pub fn multi_pipeline(&self, codec: Codec, n: usize, rows: u32, cols: u32, variant: Variant) -> Result<(wgpu::ComputePipeline, MatvecShape), String> {
        let Some(Some(bgl)) = self.multi_layouts.get(n) else {
            return Err(format!("{n} matrices in one dispatch: more storage buffers than the adapter binds, or not built"));
        };
        let class = MatrixClass::of(rows, cols);
        let mut map = self.multi.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = map.get(&(codec, n, class, variant)) {
            return Ok(found.clone());
        }
        let (_, suffix, vec4s) = MATVEC_CODECS.into_iter().find(|(c, _, _)| *c == codec).ok_or_else(|| format!("no matvec kernel for {codec}"))?;
        if variant.x.int8() && !Q8_CODECS.contains(&codec) {
            return Err(format!("no int8-activation matvec kernel for {codec}"));
        }
        let shape = MatvecShape::from_env(class);
        let src = multi::multi_source(n, suffix, vec4s, self.subgroups, shape, variant)?;
        let built = (build(&self.device, &src, bgl, self.pipeline_cache.as_ref(), &format!("matvecs {n} x {suffix}"))?, shape);
        map.insert((codec, n, class, variant), built.clone());
        Ok(built)
    }

    /// The unit-writing matvec pipeline (`q8_out.rs`) of an int8-activation codec, kind and
    /// workgroup shape (built on first use).
    pub fn q8_out_pipeline(&self, codec: Codec, kind: Q8Out, shape: UnitShape) -> Result<wgpu::ComputePipeline, String> {
        let Some(layouts) = &self.q8_out_layouts else {
            return Err("the adapter binds too few storage buffers for the unit-writing matvecs".into());
        };
        let limits = self.device.limits();
        if kind.workgroup_bytes(shape) > limits.max_compute_workgroup_storage_size || shape.invocations > limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x) {
            return Err(format!("{kind:?} in {shape:?} needs more workgroup memory or invocations than the adapter has"));
        }
        let mut map = self.q8_out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = map.get(&(codec, kind, shape)) {
            return Ok(found.clone());
        }
        let (_, suffix, _) = MATVEC_CODECS.into_iter().find(|(c, _, _)| *c == codec).ok_or_else(|| format!("no matvec kernel for {codec}"))?;
        let src = q8_out::source(kind, suffix, shape)?;
        let bgl = &layouts[usize::from(kind == Q8Out::Residual)];
        let built = build(&self.device, &src, bgl, self.pipeline_cache.as_ref(), &format!("{kind:?} to int8 {suffix}, {shape:?}"))?;
        map.insert((codec, kind, shape), built.clone());
        Ok(built)
    }

    /// The int8 graph's split attention with its own QKV (`qkv_attn.rs`) for an
    /// int8-activation codec and head size (built on first use).
    pub fn attn_qkv_pipeline(&self, codec: Codec, head_dim: u32) -> Result<wgpu::ComputePipeline, String> {
        let Some(bgl) = &self.attn_qkv_layout else {
            return Err("the adapter binds too few storage buffers for the attention with its own QKV".into());
        };
        let mut map = self.attn_qkv.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = map.get(&(codec, head_dim)) {
            return Ok(found.clone());
        }
        let (_, suffix, _) = MATVEC_CODECS.into_iter().find(|(c, _, _)| *c == codec).filter(|_| Q8_CODECS.contains(&codec)).ok_or_else(|| format!("no int8-activation kernel for {codec}"))?;
        let built = build(&self.device, &attn_qkv_source(suffix, head_dim, self.subgroups)?, bgl, self.pipeline_cache.as_ref(), &format!("attention with its own qkv {suffix}, head size {head_dim}"))?;
        map.insert((codec, head_dim), built.clone());
        Ok(built)
    }

    /// The quantizer with SPEC section 6's f16 guard (`quant_guarded_source`; built on first
    /// use), for the prefill graph's GEMMs on the matrix units.
    pub fn quant_guarded(&self) -> Result<wgpu::ComputePipeline, String> {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let (r, w) = (Storage { read_only: true }, Storage { read_only: false });
        let built = self.quant_guarded.get_or_init(|| build(&self.device, &quant_guarded_source(self.subgroups), &layout(&self.device, &[r, r, w, w, w, Uniform]), self.pipeline_cache.as_ref(), "quant with the f16 guard"));
        built.clone()
    }

    /// The tiled GEMM pipeline of a codec (built on first use) and its tile's (weight rows,
    /// batch columns); int8 ones on the matrix units where the device has them and `units`
    /// allows (f16 operands: SPEC section 6's guard decides).
    pub fn gemm_pipeline(&self, codec: Codec, int8: bool, units: bool) -> Result<(wgpu::ComputePipeline, (u32, u32)), String> {
        let mut map = self.gemm.lock().unwrap_or_else(|e| e.into_inner());
        let coop = int8 && units && self.matrix_units;
        let key = (codec, int8, coop);
        if let Some(found) = map.get(&key) {
            return Ok(found.clone());
        }
        let (_, suffix, _) = MATVEC_CODECS.into_iter().find(|(c, _, _)| *c == codec).ok_or_else(|| format!("no GEMM kernel for {codec}"))?;
        if int8 && !Q8_CODECS.contains(&codec) {
            return Err(format!("no int8-activation GEMM for {codec}"));
        }
        if coop {
            match self.coop_pipeline(suffix) {
                Ok(built) => {
                    map.insert(key, built.clone());
                    return Ok(built);
                }
                // The packed dot products' GEMM then, for this codec.
                Err(e) => eprintln!("cortiq: {e}; the int8 GEMMs of {codec} stay on the packed dot products"),
            }
        }
        let (src, label, tile) = if int8 {
            let units = gemm_stage_units(std::env::var("CMF_WGPU_GEMM_UNITS").ok().as_deref(), self.device.limits().max_compute_workgroup_storage_size)?;
            (gemm_q8_source(suffix, units), format!("gemm int8 x {suffix}, {units} units a stage"), (64, 64))
        } else {
            (gemm_source(suffix), format!("gemm {suffix}"), (64, 64))
        };
        let built = (build(&self.device, &src, &self.matvec_layout, self.pipeline_cache.as_ref(), &label)?, tile);
        map.insert(key, built.clone());
        Ok(built)
    }

    /// The matrix-unit GEMM pipeline of a codec (by its suffix) and its tile's (rows,
    /// columns).
    fn coop_pipeline(&self, suffix: &str) -> Result<(wgpu::ComputePipeline, (u32, u32)), String> {
        let tile = self.coop_tile;
        let layout = tile.stage_layout(self.device.limits().max_compute_workgroup_storage_size, self.coop_stage).ok_or_else(|| format!("the matrix-unit GEMM's {tile:?} tile does not fit the adapter's workgroup memory"))?;
        let label = format!("gemm int8 x {suffix} on matrix units, {tile:?}, {layout:?}");
        let ablate = match std::env::var("CMF_WGPU_COOP_ABLATE").ok().as_deref().map(str::trim) {
            None | Some("") => 0,
            Some("decode") => 1,
            Some("products") => 2,
            Some("loads") => 3,
            Some("barriers") => 4,
            Some(v) => return Err(format!("CMF_WGPU_COOP_ABLATE={v:?}: expected decode, products, loads or barriers")),
        };
        Ok((build(&self.device, &gemm_coop_source(suffix, tile, layout, ablate), &self.matvec_layout, self.pipeline_cache.as_ref(), &label)?, (tile.rows(), tile.cols())))
    }

    /// The prompt chunk's attention for heads of `head_dim`: on the matrix units
    /// (`attn_coop.wgsl`, built on first use) where the device has them, `units` allows and
    /// the head size is a multiple of 16 up to 128, else `attn_rows`.
    pub fn prompt_attention(&self, head_dim: usize, units: bool) -> PromptAttention {
        let sg = self.attn_coop_subgroups;
        let f32_rows = PromptAttention { pipe: self.attn_rows.clone(), rows: 1, guarded: false };
        if !(units && self.matrix_units && sg > 0 && attn_coop_head(head_dim)) {
            return f32_rows;
        }
        let mut map = self.attn_coop.lock().unwrap_or_else(|e| e.into_inner());
        let built = map.entry(head_dim as u32).or_insert_with(|| {
            let label = format!("prompt attention on matrix units, head size {head_dim}, {sg} subgroups");
            build(&self.device, &attn_coop_source(head_dim as u32, sg), &self.attn_coop_layout, self.pipeline_cache.as_ref(), &label)
                .inspect_err(|e| eprintln!("cortiq: {e}; the prompt attention of head size {head_dim} stays on attn_rows"))
                .ok()
        });
        match built {
            Some(pipe) => PromptAttention { pipe: pipe.clone(), rows: 16 * sg, guarded: true },
            None => f32_rows,
        }
    }

    /// What runs the prompt chunk's attention, for `cortiq gpu`.
    pub fn prompt_attention_line(&self) -> String {
        match self.matrix_units && self.attn_coop_subgroups > 0 {
            true => format!("prompt attention: matrix units (16 x 16 x 16 f16 cooperative matrices, {} query rows a workgroup; head sizes 16 .. 128 in steps of 16, others f32)", 16 * self.attn_coop_subgroups),
            false => "prompt attention: f32 (no 16 x 16 f16 cooperative matrices with subgroups of 32 here, or CMF_WGPU_ATTN_SUBGROUPS=0)".into(),
        }
    }

    /// What runs the int8 prompt GEMMs, for `cortiq gpu`.
    pub fn prompt_gemm_line(&self) -> String {
        match self.matrix_units {
            true => format!("prompt GEMMs: matrix units (16 x 16 x 16 f16 cooperative matrices, {} x {} tiles)", self.coop_tile.rows(), self.coop_tile.cols()),
            false => "prompt GEMMs: int8 packed dot products (no 16 x 16 f16 cooperative matrices with subgroups of 32 here, or CMF_WGPU_MATRIX_UNITS=0)".into(),
        }
    }

    /// Run the int8 GEMMs and the prompt attention on the matrix units (where the device has
    /// them) or not; returns whether they now do.
    pub fn set_matrix_units(&mut self, on: bool) -> bool {
        self.matrix_units = on && self.matrix_units_opened;
        self.info.matrix_units = self.matrix_units;
        self.matrix_units
    }

    /// The embedding-row decoder of a codec (`embed.wgsl`, built on first use).
    pub fn embed_pipeline(&self, codec: Codec) -> Result<wgpu::ComputePipeline, String> {
        let mut map = self.embed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = map.get(&codec) {
            return Ok(found.clone());
        }
        let (_, suffix, _) = MATVEC_CODECS.into_iter().find(|(c, _, _)| *c == codec).ok_or_else(|| format!("no embedding decoder for {codec}"))?;
        let built = build(&self.device, &embed_source(suffix), &self.matvec_layout, self.pipeline_cache.as_ref(), &format!("embed {suffix}"))?;
        map.insert(codec, built.clone());
        Ok(built)
    }

    /// Write the driver pipeline cache again if pipelines were built since it was saved
    /// (after the token graph's first build: its variants are compiled lazily).
    pub fn save_pipeline_cache(&self) {
        if let (Some(c), PipelineCacheState::Loaded(path, _) | PipelineCacheState::Written(path, _)) = (&self.pipeline_cache, &self.cache_state) {
            let on_disk = std::fs::read(path).ok();
            let _ = persist(c, path.clone(), on_disk);
        }
    }

    /// `job` run inside a validation error scope (the test hooks' one-off kernels): its
    /// result, or the first validation error it caused, named by `label`.
    pub fn validated<T>(&self, label: &str, job: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = job();
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(format!("{label}: {e}")),
            None => out,
        }
    }

    /// One submission: a compute pass of `encode`'s dispatches, then `copy`'s copies.
    pub fn submit_pass(&self, label: &str, encode: impl FnOnce(&mut wgpu::ComputePass), copy: impl FnOnce(&mut wgpu::CommandEncoder)) {
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        encode(&mut enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None }));
        copy(&mut enc);
        self.queue.submit([enc.finish()]);
    }

    /// Map `buf` and copy out its first `n` values (waits for the queue).
    pub fn read_back<T: bytemuck::Pod>(&self, buf: &wgpu::Buffer, n: u64) -> Result<Vec<T>, String> {
        self.read_back_after(buf, n, None)
    }

    /// `read_back`, waiting only until submission `after` has run (None: the latest), so work
    /// queued behind it keeps the device busy. `buf` must not be written by later submissions.
    pub fn read_back_after<T: bytemuck::Pod>(&self, buf: &wgpu::Buffer, n: u64, after: Option<wgpu::SubmissionIndex>) -> Result<Vec<T>, String> {
        let slice = buf.slice(..n * std::mem::size_of::<T>() as u64);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device.poll(wgpu::PollType::Wait { submission_index: after, timeout: None }).map_err(|e| format!("poll: {e}"))?;
        rx.recv().map_err(|e| format!("map: {e}"))?.map_err(|e| format!("map: {e}"))?;
        let out = bytemuck::pod_collect_to_vec::<u8, T>(&slice.get_mapped_range().map_err(|e| format!("map: {e}"))?);
        buf.unmap();
        Ok(out)
    }

    /// Host-to-device bandwidth: 64 MiB written through the queue, timed to completion.
    pub fn upload_bandwidth(&self) -> Option<f64> {
        let bytes = 64u64 << 20;
        let buf = self.device.create_buffer(&wgpu::BufferDescriptor { label: Some("bandwidth"), size: bytes, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let host = vec![0x5Au8; bytes as usize];
        self.queue.write_buffer(&buf, 0, &host);
        self.queue.submit([]);
        self.device.poll(wgpu::PollType::wait_indefinitely()).ok()?;
        let t = std::time::Instant::now();
        self.queue.write_buffer(&buf, 0, &host);
        self.queue.submit([]);
        self.device.poll(wgpu::PollType::wait_indefinitely()).ok()?;
        Some(bytes as f64 / t.elapsed().as_secs_f64())
    }
}

/// How a matvec reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XMode {
    /// x as it is.
    Plain,
    /// RMSNorm applied on load: x / rms(x) * x2 (x2: the norm weights).
    Norm,
    /// silu(x) * x2: the gated FFN's hidden state from the gate and up outputs.
    Glu,
    /// x quantized to int8 per 32-value unit (the CPU path's rule): x holds the int8 values
    /// (batch, units, 32 bytes), x2 per unit (d, d * sum, sum, 0); the `Q8_CODECS` only.
    Int8,
    /// The same of x * w (w: RMSNorm weights) with the RMS scale still to apply: x2's fourth
    /// lane holds each unit's sum of squares of x, and the kernel scales its sums by
    /// 1 / rms(x) (`p.eps` inside) before it stores them (quant.wgsl's mode 3 and the
    /// unit-writing matvecs of q8_out.rs write such rows).
    Int8Norm,
}

impl XMode {
    /// Whether x is int8 units (`Int8` or `Int8Norm`).
    pub fn int8(self) -> bool {
        matches!(self, XMode::Int8 | XMode::Int8Norm)
    }
}

/// The codecs with an int8-activation matvec (`unit_dot8_*` in codecs_q8.wgsl; Q4Tiled has
/// Q4_0's planar layout).
pub const Q8_CODECS: [Codec; 4] = [Codec::Q4_0, Codec::Q4Tiled, Codec::Q4_1, Codec::Q8_0];

/// Whether every matrix of these layers has an int8-activation kernel (the graphs' int8 paths
/// take a model only then).
pub fn int8_layers(layers: &[crate::model::llama::LayerWeights]) -> bool {
    layers.iter().all(|l| l.matrices().iter().all(|w| Q8_CODECS.contains(&crate::gpu::transcode::planar_codec(w.codec))))
}

/// A matvec kernel variant: the input mode, and whether y is added to rather than stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Variant {
    pub x: XMode,
    pub add: bool,
}

impl Variant {
    pub const PLAIN: Variant = Variant { x: XMode::Plain, add: false };
}

/// Workgroup shape of the matvec kernel: invocations and rows per workgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatvecShape {
    pub invocations: u32,
    /// A multiple of 4 (rows are reduced four at a time).
    pub rows: u32,
    /// Units each invocation takes per loop iteration.
    pub unroll: u32,
}

/// From this many rows a matrix takes the tall shape (bench/NOTES.md, wgpu variants).
pub const TALL_ROWS: u32 = 8192;
/// From this many columns and WIDE_ROWS rows, the wide shape.
pub const WIDE_COLS: u32 = 4096;
pub const WIDE_ROWS: u32 = 4096;

/// The classes of matrix the matvec kernel has a measured shape for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatrixClass {
    /// Fewer than TALL_ROWS rows of fewer than WIDE_COLS columns, or few rows.
    Short,
    /// At least TALL_ROWS rows of fewer than WIDE_COLS columns (a 1B model's FFN, a head).
    Tall,
    /// At least WIDE_ROWS rows of at least WIDE_COLS columns (an 8B model's matrices).
    Wide,
}

impl MatrixClass {
    pub fn of(rows: u32, cols: u32) -> MatrixClass {
        if cols >= WIDE_COLS && rows >= WIDE_ROWS {
            MatrixClass::Wide
        } else if rows >= TALL_ROWS {
            MatrixClass::Tall
        } else {
            MatrixClass::Short
        }
    }
}

impl MatvecShape {
    /// The measured defaults (bench/NOTES.md): tall matrices one 32-wide workgroup per 8
    /// rows (x reused over 8 rows, enough workgroups to fill the card); wide ones 128
    /// invocations per 8 rows (one unit each per iteration, so a row's loads are in flight
    /// at once); short ones 128 invocations per 4 rows, or too few threads would stream the
    /// matrix.
    pub fn default_for(class: MatrixClass) -> MatvecShape {
        match class {
            MatrixClass::Tall => MatvecShape { invocations: 32, rows: 8, unroll: 1 },
            MatrixClass::Wide => MatvecShape { invocations: 128, rows: 8, unroll: 1 },
            MatrixClass::Short => MatvecShape { invocations: 128, rows: 4, unroll: 1 },
        }
    }

    /// `CMF_WGPU_MATVEC=WGxROWS[xUNROLL]` (e.g. `128x8`, `32x8x2`) for every matrix, or per
    /// class (`tall=64x8,wide=256x8`; the classes not named keep theirs), to measure another
    /// shape; otherwise the default.
    pub fn from_env(class: MatrixClass) -> MatvecShape {
        let default = MatvecShape::default_for(class);
        match std::env::var("CMF_WGPU_MATVEC") {
            Ok(v) => MatvecShape::from_setting(&v, class).unwrap_or_else(|| {
                eprintln!("cortiq: CMF_WGPU_MATVEC={v:?} is not WGxROWS[xUNROLL] (WG 32/64/128/256, ROWS 4/8/12/16, UNROLL 1-4), bare or per class (short=, tall=, wide=); using the defaults");
                default
            }),
            Err(_) => default,
        }
    }

    /// The shape a `CMF_WGPU_MATVEC` setting gives `class` (its default where the setting
    /// names other classes only); None if the setting does not parse.
    fn from_setting(setting: &str, class: MatrixClass) -> Option<MatvecShape> {
        let name = match class {
            MatrixClass::Short => "short",
            MatrixClass::Tall => "tall",
            MatrixClass::Wide => "wide",
        };
        let mut shape = MatvecShape::default_for(class);
        for item in setting.split(',') {
            let (for_class, spec) = match item.split_once('=') {
                Some((c, spec)) if ["short", "tall", "wide"].contains(&c.trim()) => (c.trim() == name, spec),
                Some(_) => return None,
                None => (true, item),
            };
            let parts: Vec<Option<u32>> = spec.split('x').map(|p| p.trim().parse().ok()).collect();
            let parsed = match parts[..] {
                [Some(invocations), Some(rows)] => MatvecShape { invocations, rows, unroll: 1 },
                [Some(invocations), Some(rows), Some(unroll)] => MatvecShape { invocations, rows, unroll },
                _ => return None,
            };
            if ![32, 64, 128, 256].contains(&parsed.invocations) || parsed.rows % 4 != 0 || !(4..=16).contains(&parsed.rows) || !(1..=4).contains(&parsed.unroll) {
                return None;
            }
            if for_class {
                shape = parsed;
            }
        }
        Some(shape)
    }
}

/// Loads in flight per invocation while a norm-fused matvec sums the squares of its input.
const NORM_LOADS: u32 = 8;

/// The workgroup reduction's source (subgroup operations or shared memory).
pub(super) fn reduce_source(subgroups: bool) -> &'static str {
    if subgroups {
        REDUCE_SUBGROUP
    } else {
        REDUCE_SHARED
    }
}

/// The value of a reduction snippet's directive line (`// KEY=value`), empty if it has none.
fn reduce_directive(reduce: &str, key: &str) -> String {
    reduce.lines().find_map(|l| l.trim_start_matches("// ").strip_prefix(key)).unwrap_or("").to_string()
}

/// `body` with the reduction snippet `reduce` appended, its REDUCE_ARGS / REDUCE_PASS /
/// REDUCE_KEEP placeholders filled from the snippet's directives.
fn with_reduce(body: &str, reduce: &str) -> String {
    let body = ["REDUCE_ARGS", "REDUCE_PASS", "REDUCE_KEEP"].iter().fold(body.to_string(), |b, key| b.replace(key, &reduce_directive(reduce, &format!("{key}="))));
    format!("{body}\n{reduce}")
}

/// A shader over the attention chunk helpers (`kernel`: attn_split.wgsl or attn_rows.wgsl),
/// with the chunk's max and sum by subgroup operations where the adapter has them.
fn attn_chunk_source(kernel: &str, subgroups: bool) -> String {
    with_reduce(&format!("{STEP}{ATTN_CHUNK}{kernel}"), if subgroups { ATTN_REDUCE_SUBGROUP } else { ATTN_REDUCE_SHARED })
}

/// The decode split's shader: the chunk helpers, RoPE of a head, the split kernels' shared
/// pieces (attn_partial.wgsl), the kernel.
fn attn_split_source(subgroups: bool) -> String {
    attn_chunk_source(&format!("{ROPE_HEAD}{ATTN_PARTIAL}{ATTN_SPLIT}"), subgroups).replace("HEAD_NORMS", "")
}

/// The same for Gemma 3's block (with `fold`): the head's query and the fresh K row each
/// RMS-normed (`st.eps`) and multiplied by the q or k norm's weights (`qw`, `kw`: head_dim
/// each, bindings 6 and 7, the step block moved to 8) before RoPE.
fn attn_split_normed_source(subgroups: bool) -> String {
    let norm = |x: &str, w: &str| format!("{x} = {x} * inverseSqrt(chunk_reduce(dot({x}, {x}), lid, false) / f32(st.head_dim) + st.eps) * {w}[min(lid, hd4 - 1u)];");
    let norms = format!("{}\n        if (fresh) {{\n            {}\n        }}", norm("q4", "qw"), norm("k4", "kw"));
    attn_chunk_source(&format!("{ROPE_HEAD}{ATTN_PARTIAL}{ATTN_SPLIT}"), subgroups).replace("HEAD_NORMS", &norms).replace(
        "@group(0) @binding(6) var<uniform> st: Step;",
        "@group(0) @binding(6) var<storage, read> qw: array<vec4<f32>>; // (head_dim / 4) q norm weights\n@group(0) @binding(7) var<storage, read> kw: array<vec4<f32>>; // (head_dim / 4) k norm weights\n@group(0) @binding(8) var<uniform> st: Step;",
    )
}

/// Gemma 3's fused q/k norm, RoPE and mirror append (norm_rope.wgsl) with its workgroup sum.
fn norm_rope_source(subgroups: bool) -> String {
    with_reduce(&format!("{STEP}{ROPE_HEAD}{NORM_ROPE}"), reduce_source(subgroups))
}

/// The split attention with its own QKV (attn_qkv.wgsl) over int8-activation codec `suffix`
/// for heads of `head_dim` (32, 64 or 128): the split's pieces, the matrices' uniform block,
/// the kernel with its lines per loaded K and V vec4, the codec functions of Q, K and V, the
/// chunk reduction (by subgroups where the adapter has them).
fn attn_qkv_source(suffix: &str, head_dim: u32, subgroups: bool) -> Result<String, String> {
    if ![32, 64, 128].contains(&head_dim) {
        return Err(format!("the attention with its own QKV is built for head sizes 32, 64 and 128, not {head_dim}"));
    }
    let nv = head_dim / 16;
    let lines = |f: &dyn Fn(u32) -> String| (0..nv).map(f).collect::<Vec<_>>().join("\n    ");
    let score = (0..nv).map(|i| format!("dot(qh[lid % LANES + {i}u * LANES], k{i})")).collect::<Vec<_>>().join(" + ");
    let kernel = ATTN_QKV
        .replace("GEN_NV", &nv.to_string())
        .replace("GEN_LOADS", &lines(&|i| format!("var k{i} = vec4<f32>(0.0); if (j < stored) {{ k{i} = kc[kr + {i}u * LANES]; }} var v{i} = vec4<f32>(0.0); if (g + {i}u * groups < stored) {{ v{i} = vc[vr + {i}u * groups * kvd4]; }}")))
        .replace("GEN_SCORE", &format!("s = {score};"))
        .replace("GEN_VALUES", &lines(&|i| format!("if (g + {i}u * groups < stored) {{ a += sc[g + {i}u * groups] * v{i}; }}")));
    let body = format!("{ROPE_HEAD}{ATTN_PARTIAL}{}{kernel}", multi::params_block()?);
    Ok(format!("{}\n{}", attn_chunk_source(&body, subgroups), multi::codec_copies(3, suffix, true)?))
}

/// The top-k merge's shader: the keys' helpers, the kernel, the draw, and the workgroup
/// maximum of its bound and fallback rounds (with subgroup operations where the adapter has
/// them).
fn topk_merge_source(subgroups: bool) -> String {
    with_reduce(&format!("{TOPK_KEYS}{TOPK_MERGE}{TOPK_DRAW}"), if subgroups { TOPK_REDUCE_SUBGROUP } else { TOPK_REDUCE_SHARED })
}

/// The matvec shader for one codec and variant: bindings, the kernel, codec functions,
/// reduction.
fn matvec_source(suffix: &str, vec4s: u32, subgroups: bool, shape: MatvecShape, variant: Variant) -> String {
    let body = matvec_kernel(vec4s, subgroups, shape, variant);
    let reduce = reduce_source(subgroups);
    if variant.x.int8() {
        let io = weights_io_int8();
        return format!("{io}\n{body}\n{CODECS}\n{CODECS_Q8}\nfn unit_dot8(n: u32, xa: vec4<u32>, xb: vec4<u32>, xd: vec4<f32>) -> f32 {{ return unit_dot8_{suffix}(n, xa, xb, xd); }}\n{reduce}");
    }
    format!("const UNIT_VEC4: u32 = {vec4s}u;\n{WEIGHTS_IO}\n{body}\n{CODECS}\nfn unit_dot(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {{ return unit_dot_{suffix}(n, r, xs, xsum); }}\n{SILU4}\n{reduce}")
}

/// The matvec / GEMM bindings (weights_io.wgsl) with x bound as int8 units (vec4<u32>).
fn weights_io_int8() -> String {
    WEIGHTS_IO.replace("var<storage, read> x: array<vec4<f32>>;", "var<storage, read> x: array<vec4<u32>>;")
}

/// The int8 GEMMs' codec entry points `gemm_words` and `gemm_scale` for one codec suffix.
fn gemm_codec_fns(suffix: &str) -> String {
    format!("fn gemm_words(r: u32, s: u32, h: u32) -> vec4<u32> {{ return gemm_words_{suffix}(r, s, h); }}\nfn gemm_scale(r: u32, s: u32) -> vec2<f32> {{ return gemm_scale_{suffix}(r, s); }}\n")
}

/// SiLU of four values (the glu x-mode's gate).
pub(super) const SILU4: &str = "fn silu4(a: vec4<f32>) -> vec4<f32> { return a / (1.0 + exp(-a)); }";

/// The matvec kernel itself (matvec.wgsl with its generated lines filled in): its constants,
/// workgroup memory and `main`, over the bindings of weights_io.wgsl and a `unit_dot` (or
/// `unit_dot8`) and `reduce` defined beside it.
pub(super) fn matvec_kernel(vec4s: u32, subgroups: bool, shape: MatvecShape, variant: Variant) -> String {
    let reduce = reduce_source(subgroups);
    let directive = |key: &str| reduce_directive(reduce, key);
    let pass = directive("REDUCE_PASS=");
    let groups = shape.rows / 4;
    let rows = (1..shape.rows).map(|j| format!("let r{j} = min(r0 + {j}u, last);")).collect::<Vec<_>>().join(" ");
    let accs: String = (0..groups).map(|g| format!("var acc{g} = vec4<f32>(0.0); ")).collect();
    // The unit's x as a value (a struct of vec4s), never an indexed array: an array passed
    // around by pointer may be placed in local memory.
    let load = |k: u32| match variant.x {
        XMode::Plain => format!("x[xv + {k}u]"),
        XMode::Norm => format!("(x[xv + {k}u] * xscale * x2[xv - xrow + {k}u])"),
        XMode::Glu => format!("(silu4(x[xv + {k}u]) * x2[xv + {k}u])"),
        XMode::Int8 | XMode::Int8Norm => String::new(),
    };
    let loads = (0..8).map(|k| if k < vec4s { load(k) } else { "vec4<f32>(0.0)".into() }).collect::<Vec<_>>().join(", ");
    // x-mode norm: the workgroup's rms over the whole input row first, NORM_LOADS vec4s per
    // invocation and iteration, all loaded before any is summed (indices clamped, the extra
    // ones weighted 0), so their latencies overlap instead of queueing one after another.
    let prologue = match variant.x {
        XMode::Norm => {
            let loads: String = (0..NORM_LOADS).map(|k| format!("let v{k} = x[xrow + min(i + {k}u * WG, p.x_stride - 1u)]; ")).collect();
            let sums = (0..NORM_LOADS).map(|k| format!("select(0.0, dot(v{k}, v{k}), i + {k}u * WG < p.x_stride)")).collect::<Vec<_>>().join(" + ");
            format!("var ss = 0.0; for (var i = lid; i < p.x_stride; i += WG * {NORM_LOADS}u) {{ {loads}ss += {sums}; }} let xscale = inverseSqrt(reduce(vec4<f32>(ss, 0.0, 0.0, 0.0), lid{pass}).x / f32(p.x_stride * 4u) + p.eps);")
        }
        // x-mode int8 norm: the sum of squares gathered from the units' fourth lane in the loop
        // (each unit is one invocation's), the scale taken after it.
        XMode::Int8Norm => "var xss = 0.0;".into(),
        _ => String::new(),
    };
    let scale = match variant.x {
        XMode::Int8Norm => format!("let xscale = inverseSqrt(reduce(vec4<f32>(xss, 0.0, 0.0, 0.0), lid{pass}).x / f32(p.units * 32u) + p.eps); "),
        _ => String::new(),
    };
    let scaled = if variant.x == XMode::Int8Norm { " * xscale" } else { "" };
    let store = |o: u32, g: u32| if variant.add { format!("y[yrow + r0 + {o}u + lid] += t{g}[lid];") } else { format!("y[yrow + r0 + {o}u + lid] = t{g}[lid];") };
    let sum = (0..vec4s).map(|k| format!("xs.v{k}")).collect::<Vec<_>>().join(" + ");
    // Unit k of an iteration: clamped index (its loads are unconditional, so they can all
    // be issued first) and a 0/1 weight for a unit past the row's end.
    let units: String = (0..shape.unroll)
        .map(|k| {
            let head = format!("let u{k} = min(u0 + {k}u * WG, p.units - 1u); let ok{k} = select(0.0, 1.0, u0 + {k}u * WG < p.units); ");
            if variant.x.int8() {
                let dot = |j: u32| format!("unit_dot8(r{j} * p.units + u{k}, xa{k}, xb{k}, xd{k})");
                let dots: String = (0..groups).map(|g| format!("acc{g} += ok{k} * vec4<f32>({}, {}, {}, {}); ", dot(4 * g), dot(4 * g + 1), dot(4 * g + 2), dot(4 * g + 3))).collect();
                let squares = if variant.x == XMode::Int8Norm { format!("xss += ok{k} * xd{k}.w; ") } else { String::new() };
                return format!("{head}let xu{k} = wg.z * p.units + u{k}; let xa{k} = x[2u * xu{k}]; let xb{k} = x[2u * xu{k} + 1u]; let xd{k} = x2[xu{k}]; {squares}{dots}");
            }
            let dot = |j: u32| format!("unit_dot(r{j} * p.units + u{k}, r{j}, xs{k}, s{k})");
            let dots: String = (0..groups).map(|g| format!("acc{g} += ok{k} * vec4<f32>({}, {}, {}, {}); ", dot(4 * g), dot(4 * g + 1), dot(4 * g + 2), dot(4 * g + 3))).collect();
            format!(
                "{head}let xv{k} = xrow + u{k} * UNIT_VEC4; let xs{k} = X8({}); let s{k} = dot({}, vec4<f32>(1.0)); {dots}",
                loads.replace("xv", &format!("xv{k}")),
                sum.replace("xs.", &format!("xs{k}."))
            )
        })
        .collect();
    let stores: String = (0..groups)
        .map(|g| format!("let t{g} = reduce(acc{g}, lid{pass}){scaled}; if (lid < 4u && r0 + {o}u + lid < p.rows) {{ {} }} ", store(4 * g, g), o = 4 * g))
        .collect();
    let stores = format!("{scale}{stores}");
    MATVEC
        .replace("WG_SIZE", &shape.invocations.to_string())
        .replace("ROWS_PER_WG", &shape.rows.to_string())
        .replace("REDUCE_ARGS", &directive("REDUCE_ARGS="))
        .replace("PROLOGUE", &prologue)
        .replace("ROW_INDICES", &rows)
        .replace("ACCUMULATORS", &accs)
        .replace("UNROLL", &format!("{}u", shape.unroll))
        .replace("UNITS", &units)
        .replace("STORES", &stores)
}

/// The GEMM shader for one codec: the kernel, the codec helpers, the slice decoders.
fn gemm_source(suffix: &str) -> String {
    format!("{WEIGHTS_IO}\n{GEMM}\n{GEMM_STORE}\n{CODECS}\n{SLICES}\nfn slice_vals(r: u32, s: u32, part: u32) -> vec4<f32> {{ return slice_vals_{suffix}(r, s, part); }}\n")
}

/// The embedding-row decoder's shader for one codec: the kernel, the codec helpers, the slice
/// decoders.
fn embed_source(suffix: &str) -> String {
    format!("{WEIGHTS_IO}\n{EMBED}\n{CODECS}\n{SLICES}\nfn slice_vals(r: u32, s: u32, part: u32) -> vec4<f32> {{ return slice_vals_{suffix}(r, s, part); }}\n")
}

/// Workgroup memory of the int8-activation GEMM per 32-value unit of a stage: the weight and
/// activation tiles' 64 rows of two vec4<u32> each, their vec2 and vec4 scales.
const GEMM_Q8_UNIT_BYTES: u32 = 64 * (2 * 16 + 2 * 16 + 8 + 16);

/// Units per stage of the int8-activation GEMM: `setting` (`CMF_WGPU_GEMM_UNITS`: 1, 2 or
/// 4) if given, else 2 where its tiles fit `workgroup_bytes` (11 KiB: every adapter with
/// wgpu's default 16 KiB), else 1. On the H200, pp512 with 1 / 2 / 4 units: llama-8b q4_0
/// 2188 / 2737 / 2686, llama-1b 10488 / 12729 / 13110, smollm2 18852 / 24268 / 22113
/// (bench/NOTES.md, "wgpu prefill, twelfth session").
fn gemm_stage_units(setting: Option<&str>, workgroup_bytes: u32) -> Result<u32, String> {
    let fits = |u: u32| u * GEMM_Q8_UNIT_BYTES <= workgroup_bytes;
    match setting.map(str::trim) {
        None | Some("") => Ok(if fits(2) { 2 } else { 1 }),
        Some(v) => match v.parse::<u32>() {
            Ok(u @ (1 | 2 | 4)) if fits(u) => Ok(u),
            Ok(u @ (1 | 2 | 4)) => Err(format!("CMF_WGPU_GEMM_UNITS={u}: {} bytes of workgroup memory, the adapter has {workgroup_bytes}", u * GEMM_Q8_UNIT_BYTES)),
            _ => Err(format!("CMF_WGPU_GEMM_UNITS={v:?}: expected 1, 2 or 4")),
        },
    }
}

/// The int8-activation GEMM shader for one codec of `Q8_CODECS` with `units` 32-value units
/// a stage: x bound as int8 units.
fn gemm_q8_source(suffix: &str, units: u32) -> String {
    let (io, fns) = (weights_io_int8(), gemm_codec_fns(suffix));
    format!("const STAGE_UNITS: u32 = {units}u;\n{io}\n{GEMM_Q8}\n{GEMM_STORE}\n{CODECS}\n{CODECS_Q8}\n{fns}fn gemm_combine(dot: i32, w: vec2<f32>, xd: vec4<f32>) -> f32 {{ return gemm_combine_{suffix}(dot, w, xd); }}\n")
}

/// The matrix-unit GEMM's workgroup (`gemm_coop.wgsl`): sg_m x sg_n subgroups of 32, each
/// a block of fm x fn 16 x 16 sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopTile {
    pub sg_m: u32,
    pub sg_n: u32,
    pub fm: u32,
    pub fn_: u32,
}

impl CoopTile {
    /// The default: on the H200 2 x 2 subgroups of 2 x 2 sums beat 2 x 4, 4 x 2 and 4 x 4
    /// subgroups on every model (bench/NOTES.md, "wgpu prefill, twentieth session").
    pub const DEFAULT: CoopTile = CoopTile { sg_m: 2, sg_n: 2, fm: 2, fn_: 2 };

    /// Tile rows (weight rows) and columns (batch rows).
    pub fn rows(self) -> u32 {
        16 * self.fm * self.sg_m
    }
    pub fn cols(self) -> u32 {
        16 * self.fn_ * self.sg_n
    }
    /// Workgroup memory at `units` units a stage in `buffers` copies: both f16 tiles (80
    /// bytes a row a unit) and a 16 x 16 f32 sum per subgroup.
    fn bytes(self, units: u32, buffers: u32) -> u32 {
        (self.rows() + self.cols()) * 80 * units * buffers + 1024 * self.sg_m * self.sg_n
    }
    /// The stage: `wanted` where its tiles fit `workgroup_bytes`, else one unit in one copy
    /// (None: not even that).
    fn stage_layout(self, workgroup_bytes: u32, wanted: CoopStage) -> Option<CoopStage> {
        [wanted, CoopStage { units: 1, copies: 1, ..wanted }].into_iter().find(|st| self.bytes(st.units, st.copies) <= workgroup_bytes)
    }
}

/// The matrix-unit GEMM's K loop (`gemm_coop.wgsl`): 32-value units a stage, copies of the
/// stage tiles (2: the next stage stored while this one is multiplied) and stages whose
/// words are loaded into registers ahead of their store (1 or 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoopStage {
    pub units: u32,
    pub copies: u32,
    pub ahead: u32,
}

/// The matrix-unit GEMM's tile: `setting` (`CMF_WGPU_COOP_TILE=MxN` subgroups, e.g. `2x4`, or
/// `MxNxFMxFN` with each subgroup's block of sums, e.g. `2x2x2x4`) or `CoopTile::DEFAULT`.
fn coop_tile(setting: Option<&str>) -> Result<CoopTile, String> {
    let Some(v) = setting.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(CoopTile::DEFAULT);
    };
    let dims: Vec<Option<u32>> = v.split('x').map(|d| d.parse().ok().filter(|n| (1..=4).contains(n))).collect();
    match dims[..] {
        [Some(sg_m), Some(sg_n)] => Ok(CoopTile { sg_m, sg_n, ..CoopTile::DEFAULT }),
        [Some(sg_m), Some(sg_n), Some(fm), Some(fn_)] => Ok(CoopTile { sg_m, sg_n, fm, fn_ }),
        _ => Err(format!("CMF_WGPU_COOP_TILE={v:?}: expected MxN or MxNxFMxFN, each 1 to 4 (e.g. 2x4, 2x2x2x4)")),
    }
}

/// The matrix-unit prompt attention's subgroups a workgroup: `setting`
/// (`CMF_WGPU_ATTN_SUBGROUPS`: 1, 2 or 4, or 0 for `attn_rows`) or 4.
fn attn_coop_subgroups(setting: Option<&str>) -> Result<u32, String> {
    match setting.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(4),
        Some(v) => v.parse().ok().filter(|n| [0, 1, 2, 4].contains(n)).ok_or_else(|| format!("CMF_WGPU_ATTN_SUBGROUPS={v:?}: expected 0, 1, 2 or 4")),
    }
}

/// Whether attn_coop.wgsl takes heads of `head_dim`: a whole number of 16-wide matrices, as
/// many as its named query matrices and sums allow (8).
fn attn_coop_head(head_dim: usize) -> bool {
    head_dim.is_multiple_of(16) && (16..=128).contains(&head_dim)
}

/// The matrix-unit prompt attention's shader (attn_coop.wgsl) for heads of `head_dim` (a
/// multiple of 16, at most 128) and `sg` subgroups a workgroup (1, 2 or 4): each query
/// matrix, score tile and sum its own named variable.
fn attn_coop_source(head_dim: u32, sg: u32) -> String {
    let tiles = head_dim / 16;
    let each = |f: &dyn Fn(u32) -> String| (0..tiles).map(f).collect::<Vec<_>>().join("\n    ");
    // A line per 16-position tile of a chunk, each with its products over the head's tiles.
    let per_position_tile = |f: &dyn Fn(u32, String) -> String, product: &dyn Fn(u32, u32) -> String| (0..2).map(|j| f(j, (0..tiles).map(|i| product(i, j)).collect::<Vec<_>>().join(" "))).collect::<Vec<_>>().join("\n        ");
    let scores = per_position_tile(
        &|j, products| format!("var s{j} = coop_mat16x16<f32, C>(); {products} coopStore(s{j}, &sm[16u * T * g + {}u], 16u);", 256 * j),
        &|i, j| format!("s{j} = coopMultiplyAdd(q{i}, coopLoad<coop_mat16x16<f16, B>>(&kv[{}u * HP4 + {}u], HP4), s{j});", 16 * j, 4 * i),
    );
    let pv = per_position_tile(
        &|j, products| format!("let p{j} = coopLoadT<coop_mat16x16<f16, A>>(&pm[16u * PP * g + {}u], PP); {products}", 16 * j),
        &|i, j| format!("o{i} = coopMultiplyAdd(p{j}, coopLoadT<coop_mat16x16<f16, B>>(&kv[(T + {}u) * HP4 + {}u], HP4), o{i});", 16 * j, 4 * i),
    );
    let kernel = ATTN_COOP
        .replace("GEN_Q", &each(&|i| format!("let q{i} = coopLoadT<coop_mat16x16<f16, A>>(&kv[16u * g * HP4 + {}u], HP4);", 4 * i)))
        .replace("GEN_SCORES", &scores)
        .replace("GEN_OUT", &each(&|i| format!("emit(o{i}, {i}u, g, lane, row, l, h, r0, rows_here);")))
        .replace("GEN_O", &each(&|i| format!("var o{i} = coop_mat16x16<f32, C>();")))
        .replace("GEN_PV", &pv);
    format!("enable f16;\nenable wgpu_cooperative_matrix;\nconst HD: u32 = {head_dim}u;\nconst SG: u32 = {sg}u;\n{STEP}{kernel}{F16_GUARD_WGSL}")
}

/// The matrix-unit GEMM's stage: `setting` (`CMF_WGPU_COOP_STAGE=UxB[xA]`: U units of 32
/// values a stage, 1 to 4, in B copies of the tiles, 1 or 2, A stages loaded ahead, 1 or 2)
/// or two units in one copy, one ahead, which beat 1x1, 1x2, 2x2 and 4x1 on llama-8b on the
/// H200 (bench/NOTES.md, "wgpu prefill, twenty-first session").
fn coop_stage(setting: Option<&str>) -> Result<CoopStage, String> {
    let Some(v) = setting.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(CoopStage { units: 2, copies: 1, ahead: 1 });
    };
    let dims: Vec<Option<u32>> = v.split('x').map(|d| d.parse().ok()).collect();
    match dims[..] {
        [Some(units @ 1..=4), Some(copies @ 1..=2)] => Ok(CoopStage { units, copies, ahead: 1 }),
        [Some(units @ 1..=4), Some(copies @ 1..=2), Some(ahead @ 1..=2)] => Ok(CoopStage { units, copies, ahead }),
        _ => Err(format!("CMF_WGPU_COOP_STAGE={v:?}: expected UxB[xA], U units a stage (1 to 4) in B tile copies (1 or 2), A stages loaded ahead (1 or 2), e.g. 2x1")),
    }
}

/// The matrix-unit GEMM shader for one codec of `Q8_CODECS`, tile and stage: x bound as int8
/// units; `ablate` a profiling switch (`CMF_WGPU_COOP_ABLATE`, outputs wrong): 0 off, 1 no
/// decode, 2 no products, 3 no global loads after the first stage's, 4 no barriers in the
/// stage loop.
fn gemm_coop_source(suffix: &str, tile: CoopTile, stage: CoopStage, ablate: u32) -> String {
    let CoopStage { units, copies, ahead } = stage;
    let (io, fns) = (weights_io_int8(), gemm_codec_fns(suffix));
    let CoopTile { sg_m, sg_n, fm, fn_ } = tile;
    let sums = |f: &dyn Fn(u32, u32) -> String| (0..fm).flat_map(|i| (0..fn_).map(move |j| (i, j))).map(|(i, j)| f(i, j)).collect::<Vec<_>>();
    let products = [
        (0..fm).map(|i| format!("let a{i} = coopLoadT<coop_mat16x16<f16, A>>(&wt[(TM * (bu + u) + m0 + {}u) * KP4 + k], KP4);", 16 * i)).collect::<Vec<_>>(),
        (0..fn_).map(|j| format!("let b{j} = coopLoad<coop_mat16x16<f16, B>>(&xt[(TN * (bu + u) + n0 + {}u) * KP4 + k], KP4);", 16 * j)).collect(),
        sums(&|i, j| format!("c{i}{j} = coopMultiplyAdd(a{i}, b{j}, c{i}{j});")),
    ]
    .concat();
    let kernel = GEMM_COOP
        .replace("GEN_SUMS", &sums(&|i, j| format!("var c{i}{j} = coop_mat16x16<f32, C>();")).join("\n    "))
        .replace("GEN_PRODUCTS", &products.join("\n                "))
        .replace("GEN_STORES", &sums(&|i, j| format!("emit(c{i}{j}, g, lane, row0 + m0 + {}u, col0 + n0 + {}u);", 16 * i, 16 * j)).join("\n    "));
    format!("enable f16;\nenable wgpu_cooperative_matrix;\nconst STAGE_UNITS: u32 = {units}u;\nconst BUFFERS: u32 = {copies}u;\nconst AHEAD: u32 = {ahead}u;\nconst SG_M: u32 = {sg_m}u;\nconst SG_N: u32 = {sg_n}u;\nconst FM: u32 = {fm}u;\nconst FN: u32 = {fn_}u;\nconst ABLATE: u32 = {ablate}u;\n{io}\n{kernel}\n{CODECS}\n{CODECS_Q8}\n{CODECS_COOP}\n{fns}fn coop_weights(levels: vec4<i32>, w: vec2<f32>) -> vec4<f32> {{ return coop_weights_{suffix}(levels, w); }}\n")
}

/// The matrix configuration `gemm_coop.wgsl` is written for: 16 x 16 x 16, f16 inputs, f32
/// sums.
fn coop_config(c: &wgpu::CooperativeMatrixProperties) -> bool {
    use wgpu::CooperativeScalarType::{F16, F32};
    (c.m_size, c.n_size, c.k_size, c.ab_type, c.cr_type) == (16, 16, 16, F16, F32)
}

/// Whether the adapter offers what `gemm_coop.wgsl` needs: cooperative matrices in
/// `coop_config` and subgroups of exactly 32 (the kernel's subgroups split its tile).
fn matrix_units_offered(adapter: &wgpu::Adapter) -> bool {
    let info = adapter.get_info();
    adapter.features().contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) && adapter.cooperative_matrix_properties().iter().any(coop_config) && (info.subgroup_min_size, info.subgroup_max_size) == (32, 32)
}

/// Whether to run the int8 GEMMs on the adapter's matrix units: `setting`
/// (`CMF_WGPU_MATRIX_UNITS=0|1`, default on) where the adapter (`name`) `offered` them; `1`
/// where it did not is an error.
fn matrix_units_wanted(setting: Option<&str>, offered: bool, name: &str) -> Result<bool, String> {
    match setting.map(str::trim) {
        None | Some("") | Some("1") if offered => Ok(true),
        None | Some("") | Some("0") => Ok(false),
        Some("1") => Err(format!("CMF_WGPU_MATRIX_UNITS=1: {name} offers no 16 x 16 x 16 f16 cooperative matrices with subgroups of 32")),
        Some(v) => Err(format!("CMF_WGPU_MATRIX_UNITS={v:?}: expected 0 or 1")),
    }
}

/// An explicit bind group layout (bindings 0.. in order), so every pipeline of a kind takes
/// the same bind groups whether or not its shader reads every binding.
fn layout(device: &wgpu::Device, kinds: &[wgpu::BufferBindingType]) -> wgpu::BindGroupLayout {
    let entries: Vec<wgpu::BindGroupLayoutEntry> = kinds
        .iter()
        .enumerate()
        .map(|(i, &ty)| wgpu::BindGroupLayoutEntry { binding: i as u32, visibility: wgpu::ShaderStages::COMPUTE, ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None }, count: None })
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries })
}

fn build(device: &wgpu::Device, src: &str, bgl: &wgpu::BindGroupLayout, cache: Option<&wgpu::PipelineCache>, label: &str) -> Result<wgpu::ComputePipeline, String> {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    // The driver's own compiler failing on a shader surfaces as an internal error.
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let desc = wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(src.into()) };
    let module = if std::env::var("CMF_WGPU_CHECKED").is_ok_and(|v| v == "1") {
        device.create_shader_module(desc)
    } else {
        // SAFETY: without wgpu's injected bounds checks and loop counters, an out-of-range
        // index would be undefined behaviour. Every index these kernels form is bounded by
        // the job's shape, which the host validated against the buffers it allocated: weight
        // units < rows * units of the chunk's own buffer (tail rows clamp to the last row), x
        // reads < batch * cols, outputs < the output buffer; every loop runs to a uniform
        // bound taken from the same parameters.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some(label), bind_group_layouts: &[Some(bgl)], immediate_size: 0 });
    let pipe = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(label), layout: Some(&pl), module: &module, entry_point: Some("main"), compilation_options: Default::default(), cache });
    let failed = pollster::block_on(internal.pop());
    match pollster::block_on(scope.pop()).or(failed) {
        Some(e) => Err(format!("{label} shader: {e}")),
        None => Ok(pipe),
    }
}

/// The pipeline cache for this adapter and driver: (cache, (file, bytes loaded if any)).
fn open_cache(device: &wgpu::Device, adapter: &wgpu::Adapter, features: wgpu::Features) -> (Option<wgpu::PipelineCache>, Option<CacheFile>) {
    let Some(key) = wgpu::util::pipeline_cache_key(&adapter.get_info()).filter(|_| features.contains(wgpu::Features::PIPELINE_CACHE)) else {
        return (None, None);
    };
    let path = crate::hub::cache_dir().join("wgpu-pipelines").join(format!("{key}-cortiq-{}", env!("CARGO_PKG_VERSION")));
    let data = std::fs::read(&path).ok();
    // SAFETY: the data is what `get_data` wrote for this adapter key and engine version;
    // `fallback: true` makes the driver ignore (and rebuild) a cache it does not accept.
    let cache = unsafe { device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor { label: Some("cortiq"), data: data.as_deref(), fallback: true }) };
    (Some(cache), Some((path, data)))
}

/// Write the cache's data atomically (temp file, then rename) unless the file already
/// holds exactly it (then the pipelines came from the cache).
fn persist(cache: &wgpu::PipelineCache, path: PathBuf, loaded: Option<Vec<u8>>) -> PipelineCacheState {
    let Some(data) = cache.get_data() else {
        return PipelineCacheState::NotWritten(path, "the driver returned no data".into());
    };
    if loaded.as_deref() == Some(&data[..]) {
        return PipelineCacheState::Loaded(path, data.len());
    }
    let write = || -> std::io::Result<()> {
        let dir = path.parent().expect("cache path has a parent");
        std::fs::create_dir_all(dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &data)?;
        std::fs::rename(&tmp, &path)
    };
    match write() {
        Ok(()) => PipelineCacheState::Written(path, data.len()),
        Err(e) => PipelineCacheState::NotWritten(path, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_f16_guards_bound_is_the_shaders() {
        assert!(F16_GUARD_WGSL.contains(&format!("const F16_GUARD: f32 = {F16_GUARD:.1};")));
        assert!(quant_guarded_source(true).contains("@group(0) @binding(5) var<uniform> qp"), "the guarded quantizer's uniform block moved past the guard's word");
    }

    fn validate(label: &str, src: &str) {
        let module = naga::front::wgsl::parse_str(src).unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(src)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{label}: {}", e.emit_to_string(src)));
    }

    /// The matrix classes behind the measured shapes, on the models' own matrices.
    #[test]
    fn matrices_take_the_class_their_shape_was_measured_for() {
        for (rows, cols, class) in [
            (14_336, 4096, MatrixClass::Wide), // 8b gate / up
            (4096, 14_336, MatrixClass::Wide), // 8b down
            (4096, 4096, MatrixClass::Wide),   // 8b q / o
            (1024, 4096, MatrixClass::Short),  // 8b k / v
            (8192, 2048, MatrixClass::Tall),   // 1b gate / up
            (128_256, 2048, MatrixClass::Tall), // 1b head
            (2048, 8192, MatrixClass::Short),  // 1b down
            (1536, 576, MatrixClass::Short),   // smollm2 FFN
        ] {
            assert_eq!(MatrixClass::of(rows, cols), class, "{rows} x {cols}");
        }
    }

    /// The matrix-unit GEMM's tile and stage settings, what fits an adapter's workgroup
    /// memory, the prompt attention's subgroup setting, and the setting that turns the
    /// matrix units on or off.
    #[test]
    fn the_matrix_unit_gemm_takes_its_tile_and_setting() {
        assert_eq!(coop_tile(None), Ok(CoopTile::DEFAULT));
        assert_eq!(coop_tile(Some(" 2x4 ")), Ok(CoopTile { sg_m: 2, sg_n: 4, fm: 2, fn_: 2 }));
        assert_eq!(coop_tile(Some("2x2x1x4")), Ok(CoopTile { sg_m: 2, sg_n: 2, fm: 1, fn_: 4 }));
        for bad in ["2", "2x5", "0x2", "2x2x2", "2x2x2x2x2", "axb"] {
            assert!(coop_tile(Some(bad)).unwrap_err().contains("expected MxN or MxNxFMxFN"), "{bad}");
        }
        let t = CoopTile { sg_m: 4, sg_n: 4, ..CoopTile::DEFAULT };
        assert_eq!((t.rows(), t.cols()), (128, 128));
        let wide = CoopTile { fn_: 4, ..CoopTile::DEFAULT };
        assert_eq!((wide.rows(), wide.cols()), (64, 128));
        // Two units of 256 tile rows and columns at 80 bytes and 16 sums of 1 KiB: 56 KiB,
        // over 48 KiB, so one unit a stage, in one copy; the default takes two units in two
        // copies (44 KiB), or in one where asked.
        let stage = |units, copies, ahead| CoopStage { units, copies, ahead };
        assert_eq!(t.stage_layout(49152, stage(2, 1, 2)), Some(stage(1, 1, 2)));
        assert_eq!(CoopTile::DEFAULT.stage_layout(49152, stage(2, 2, 1)), Some(stage(2, 2, 1)));
        assert_eq!(CoopTile::DEFAULT.stage_layout(49152, stage(2, 1, 1)), Some(stage(2, 1, 1)));
        assert_eq!(CoopTile::DEFAULT.stage_layout(32768, stage(2, 2, 1)), Some(stage(1, 1, 1)));
        assert_eq!(t.stage_layout(16384, stage(1, 1, 1)), None);
        assert_eq!((attn_coop_subgroups(None), attn_coop_subgroups(Some("0")), attn_coop_subgroups(Some("2 "))), (Ok(4), Ok(0), Ok(2)));
        assert!(attn_coop_subgroups(Some("3")).unwrap_err().contains("expected 0, 1, 2 or 4"));
        let heads: Vec<usize> = (0..=300).filter(|&d| attn_coop_head(d)).collect();
        assert_eq!(heads, [16, 32, 48, 64, 80, 96, 112, 128]);
        assert_eq!(coop_stage(None), Ok(stage(2, 1, 1)));
        assert_eq!(coop_stage(Some(" 1x2")), Ok(stage(1, 2, 1)));
        assert_eq!(coop_stage(Some("2x1x2")), Ok(stage(2, 1, 2)));
        for bad in ["3", "0x1", "5x1", "2x3", "2x1x3", "2x1x1x1", "x"] {
            assert!(coop_stage(Some(bad)).unwrap_err().contains("expected UxB[xA]"), "{bad}");
        }
        assert_eq!(matrix_units_wanted(None, true, "gpu"), Ok(true));
        assert_eq!(matrix_units_wanted(Some("0"), true, "gpu"), Ok(false));
        assert_eq!(matrix_units_wanted(None, false, "gpu"), Ok(false));
        assert!(matrix_units_wanted(Some("1"), false, "llvmpipe").unwrap_err().contains("llvmpipe offers no"));
        assert!(matrix_units_wanted(Some("yes"), true, "gpu").unwrap_err().contains("expected 0 or 1"));
    }

    #[test]
    fn the_int8_gemm_stages_as_many_units_as_fit() {
        use super::{gemm_stage_units, GEMM_Q8_UNIT_BYTES};
        assert_eq!(GEMM_Q8_UNIT_BYTES, 5632);
        assert_eq!(gemm_stage_units(None, 49152), Ok(2));
        assert_eq!(gemm_stage_units(Some("4"), 49152), Ok(4));
        assert_eq!(gemm_stage_units(None, 16384), Ok(2));
        assert_eq!(gemm_stage_units(Some(" "), 8192), Ok(1));
        assert_eq!(gemm_stage_units(Some("1"), 49152), Ok(1));
        assert!(gemm_stage_units(Some("4"), 16384).unwrap_err().contains("16384"));
        assert!(gemm_stage_units(Some("3"), 49152).unwrap_err().contains("expected 1, 2 or 4"));
    }

    #[test]
    fn a_matvec_shape_setting_names_every_class_or_some() {
        let tall = MatvecShape::default_for(MatrixClass::Tall);
        assert_eq!(MatvecShape::from_setting("64x8", MatrixClass::Wide), Some(MatvecShape { invocations: 64, rows: 8, unroll: 1 }));
        assert_eq!(MatvecShape::from_setting("wide=256x8x2", MatrixClass::Wide), Some(MatvecShape { invocations: 256, rows: 8, unroll: 2 }));
        assert_eq!(MatvecShape::from_setting("wide=256x8x2", MatrixClass::Tall), Some(tall));
        assert_eq!(MatvecShape::from_setting("tall=64x8, short=32x4", MatrixClass::Short), Some(MatvecShape { invocations: 32, rows: 4, unroll: 1 }));
        for bad in ["", "64", "64x6", "48x8", "tall=64x8x9", "huge=64x8", "tall=", "wide=128x8,x"] {
            assert_eq!(MatvecShape::from_setting(bad, MatrixClass::Tall), None, "{bad:?}");
        }
    }

    /// The kernels are compiled by the driver only where an adapter exists; this checks every
    /// generated shader with wgpu's own front end everywhere, CI included.
    #[test]
    fn every_generated_shader_parses_and_validates() {
        for (codec, suffix, vec4s) in MATVEC_CODECS {
            for subgroups in [false, true] {
                for (invocations, rows, unroll) in [(64, 4, 1), (128, 8, 2), (32, 16, 3)] {
                    let shape = MatvecShape { invocations, rows, unroll };
                    for x in [XMode::Plain, XMode::Norm, XMode::Glu, XMode::Int8, XMode::Int8Norm] {
                        if x.int8() && !Q8_CODECS.contains(&codec) {
                            continue;
                        }
                        let variant = Variant { x, add: x != XMode::Plain };
                        validate(&format!("matvec {codec} subgroups={subgroups} {shape:?} {variant:?}"), &matvec_source(suffix, vec4s, subgroups, shape, variant));
                    }
                }
            }
        }
        for (codec, suffix, vec4s) in MATVEC_CODECS {
            for n in 2..=multi::MAX_MATRICES {
                for subgroups in [false, true] {
                    for x in [XMode::Plain, XMode::Norm, XMode::Int8, XMode::Int8Norm] {
                        if x.int8() && !Q8_CODECS.contains(&codec) {
                            continue;
                        }
                        let shape = MatvecShape { invocations: 128, rows: 8, unroll: 2 };
                        let variant = Variant { x, add: false };
                        let src = multi::multi_source(n, suffix, vec4s, subgroups, shape, variant).unwrap();
                        validate(&format!("matvecs {n} x {codec} subgroups={subgroups} {variant:?}"), &src);
                    }
                }
            }
        }
        for (codec, suffix, _) in MATVEC_CODECS {
            validate(&format!("gemm {suffix}"), &gemm_source(suffix));
            validate(&format!("embed {suffix}"), &embed_source(suffix));
            if Q8_CODECS.contains(&codec) {
                for units in [1, 2, 4] {
                    validate(&format!("gemm int8 x {suffix}, {units} units a stage"), &gemm_q8_source(suffix, units));
                    for (tile, ablate) in [(CoopTile::DEFAULT, 0), (CoopTile { sg_m: 2, sg_n: 4, fm: 1, fn_: 3 }, 1), (CoopTile { sg_m: 4, sg_n: 4, fm: 2, fn_: 4 }, 2), (CoopTile::DEFAULT, 3), (CoopTile::DEFAULT, 4)] {
                        for (copies, ahead) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
                            let stage = CoopStage { units, copies, ahead };
                            validate(&format!("gemm int8 x {suffix} on matrix units, {tile:?}, {stage:?}, ablation {ablate}"), &gemm_coop_source(suffix, tile, stage, ablate));
                        }
                    }
                }
                for head_dim in [32, 64, 128] {
                    for subgroups in [false, true] {
                        validate(&format!("attn_qkv {suffix}, head size {head_dim}, subgroups={subgroups}"), &attn_qkv_source(suffix, head_dim, subgroups).unwrap());
                    }
                }
                assert!(attn_qkv_source(suffix, 96, true).is_err());
                for kind in [Q8Out::Glu { normed: false }, Q8Out::Glu { normed: true }, Q8Out::Residual] {
                    for rows in [4, 8, 16] {
                        for invocations in [256, 512] {
                            let shape = UnitShape { rows, invocations };
                            if let Ok(src) = q8_out::source(kind, suffix, shape) {
                                validate(&format!("{kind:?} to int8 {suffix}, {shape:?}"), &src);
                            }
                        }
                    }
                }
            }
        }
        for subgroups in [false, true] {
            validate(&format!("topk_merge subgroups={subgroups}"), &topk_merge_source(subgroups));
            validate(&format!("norm subgroups={subgroups}"), &norm_source(subgroups));
            validate(&format!("norm_rope subgroups={subgroups}"), &norm_rope_source(subgroups));
            validate(&format!("post_norm subgroups={subgroups}"), &post_norm_source(subgroups));
            validate(&format!("quant subgroups={subgroups}"), &quant_source(subgroups));
            validate(&format!("quant with the f16 guard, subgroups={subgroups}"), &quant_guarded_source(subgroups));
            validate(&format!("attn_split subgroups={subgroups}"), &attn_split_source(subgroups));
            validate(&format!("attn_split_normed subgroups={subgroups}"), &attn_split_normed_source(subgroups));
            validate(&format!("attn_rows subgroups={subgroups}"), &attn_chunk_source(ATTN_ROWS, subgroups));
        }
        for head_dim in [16, 32, 48, 64, 80, 96, 112, 128] {
            for sg in [1, 2, 4] {
                validate(&format!("prompt attention on matrix units, head size {head_dim}, {sg} subgroups"), &attn_coop_source(head_dim, sg));
            }
        }
        for (name, src) in [("act", ACT.to_string()), ("rope_store", format!("{STEP}{ROPE_STORE}")), ("attn_combine", format!("{STEP}{ATTN_MERGE}{ATTN_COMBINE}")), ("attn_combine_q8", format!("{STEP}{ATTN_MERGE}{ATTN_COMBINE_Q8}{QUANT_UNIT}")), ("argmax", format!("{ARGMAX_PICK}{ARGMAX}")), ("argmax_merge", format!("{ARGMAX_PICK}{ARGMAX_MERGE}")), ("topk_groups", format!("{TOPK_KEYS}{TOPK_GROUPS}"))] {
            validate(name, &src);
        }
    }
}
