//! Every layer of a small model's decode token in one thread-block cluster launch
//! (`kernels/cluster.cu`, sm_90+): where a model's per-block share of each stage's weights
//! fits shared memory twice over (two prefetch slots), the token graph runs its layers as one
//! launch of CLUSTER_BLOCKS blocks that trade vectors through distributed shared memory
//! instead of six kernel boundaries a layer. The layout sums here mirror the kernel's.
//! Off unless `CMF_CUDA_CLUSTER=1`: it matches the layer launches on the H200 but decodes
//! smollm2 at 0.58x their speed (bench/NOTES.md, session 36).

use crate::gpu::backend::Activation;
use crate::model::LlamaConfig;
use cudarc::driver::LaunchConfig;

/// Blocks of the cluster and threads of a block (cluster.cu's CL_BLOCKS, CL_THREADS).
pub(super) const CLUSTER_BLOCKS: usize = 16;
pub(super) const CLUSTER_THREADS: u32 = 512;
/// The kernels, by codec kind and head size (compiled for sm_90 and later only).
pub(super) const KERNELS: [&str; 6] = ["cluster_layers_k0_h64", "cluster_layers_k1_h64", "cluster_layers_k2_h64", "cluster_layers_k0_h128", "cluster_layers_k1_h128", "cluster_layers_k2_h128"];
/// Bytes before the layer rows in the table the kernel reads (the shape, padded).
const SHAPE_BYTES: usize = 64;
/// Shared bytes the kernel declares statically beyond the 512 the backend's limit leaves every
/// kernel (the block's decoder state and barriers: 1072 bytes on sm_90, ptxas): its dynamic
/// shared memory may reach the limit less these.
pub(super) const STATIC_SMEM: usize = 1536;

/// The model's geometry as the kernel reads it (cluster.cu's ClusterShape, the same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ClusterShape {
    n_layer: i32,
    d: i32,
    n_head: i32,
    n_head_kv: i32,
    head_dim: i32,
    ff: i32,
    rot: i32,
    neox: i32,
    base: f32,
    eps: f32,
    scale: f32,
    slot_bytes: i32,
    kv_cap: i32,
}

/// One layer's tensors as device addresses (cluster.cu's ClusterLayer, the same layout):
/// q, k, v, o, gate, up, down, their scale offsets (u32 words), the norms, the K / V mirror.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct ClusterLayer {
    pub w: [u64; 7],
    pub a_off: [i32; 7],
    pub pad: i32,
    pub attn_norm: u64,
    pub ffn_norm: u64,
    pub kc: u64,
    pub vc: u64,
}

/// How a model runs through the cluster kernel: its name, dynamic shared bytes and shape.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ClusterPlan {
    pub kernel: String,
    pub smem: usize,
    shape: ClusterShape,
}

impl ClusterPlan {
    /// The kernel's launch: one cluster of CLUSTER_BLOCKS blocks with the plan's shared bytes.
    pub(super) fn launch_config(&self) -> LaunchConfig {
        LaunchConfig { grid_dim: (CLUSTER_BLOCKS as u32, 1, 1), block_dim: (CLUSTER_THREADS, 1, 1), shared_mem_bytes: self.smem as u32 }
    }
}

/// A stage's share of n rows for one block, in multiples of 4 (cluster.cu's cl_share).
fn share(n: usize) -> usize {
    n.div_ceil(CLUSTER_BLOCKS).next_multiple_of(4)
}

fn align16(n: usize) -> usize {
    n.next_multiple_of(16)
}

/// Slot bytes of `rows` rows of `units` units of codec kind `kind` (payload, then the scales'
/// 16-byte-aligned copy, at most 14 bytes of it before the first scale).
fn piece_bytes(kind: i32, rows: usize, units: usize) -> usize {
    let (pay, scale) = match kind {
        1 => (16, 4),
        2 => (32, 2),
        _ => (16, 2),
    };
    rows * units * pay + align16(rows * units * scale + 15)
}

/// The plan for a model of geometry `c` whose layer weights are all of codec kind `kind`,
/// within `smem_limit` dynamic shared bytes a block, or why there is none.
pub(super) fn plan(c: &LlamaConfig, kind: i32, smem_limit: usize) -> Result<ClusterPlan, &'static str> {
    if !(0..=2).contains(&kind) {
        return Err("the cluster kernel takes Q4_0, Q4_1 and Q8_0 layers");
    }
    let (d, ff, hd, qd, kvd) = (c.n_embd, c.n_ff, c.head_dim, c.q_dim(), c.kv_dim());
    if ![64, 128].contains(&hd) || c.n_head_kv == 0 || !c.n_head.is_multiple_of(c.n_head_kv) || c.rope_dims > hd || !c.rope_dims.is_multiple_of(2) {
        return Err("the cluster kernel takes heads of 64 or 128 values and whole query groups");
    }
    if [d, ff, qd].iter().any(|n| !n.is_multiple_of(32)) || c.qk_norm || c.post_norms || c.sliding.is_some() || c.act != Activation::Silu {
        return Err("the cluster kernel takes the plain llama block with 32-value units");
    }
    let slabs = c.n_head + 2 * c.n_head_kv;
    let stage_a = slabs.div_ceil(CLUSTER_BLOCKS) * piece_bytes(kind, hd, d / 32) + 4 * d;
    let stage_c = piece_bytes(kind, share(d), qd / 32);
    let stage_d = 2 * piece_bytes(kind, share(ff), d / 32) + 4 * d;
    let stage_e = piece_bytes(kind, share(d), ff / 32);
    let slot = align16(stage_a.max(stage_c).max(stage_d).max(stage_e));
    let kv_cap = slot / (2 * super::graph::KV_BYTES * kvd);
    if kv_cap < 16 {
        return Err("the cluster kernel's slots would hold fewer than 16 K / V rows");
    }
    let widest = d.max(qd).max(ff);
    let part_w = hd + 4;
    let rows = hd.max(share(d)).max(2 * share(ff)).max(c.n_head * part_w);
    let boxes = [qd + 2 * kvd, CLUSTER_BLOCKS * c.n_head * part_w, d, ff, d];
    let smem = align16(4 * d) + align16(widest + 12 * (widest / 32)) + align16(4 * rows) + align16(4 * qd.max(hd)) + boxes.iter().map(|n| align16(4 * n)).sum::<usize>() + 2 * slot + c.n_layer * std::mem::size_of::<ClusterLayer>();
    if smem + STATIC_SMEM > smem_limit {
        return Err("the cluster kernel's slots and inboxes exceed the shared memory");
    }
    let shape = ClusterShape {
        n_layer: c.n_layer as i32,
        d: d as i32,
        n_head: c.n_head as i32,
        n_head_kv: c.n_head_kv as i32,
        head_dim: hd as i32,
        ff: ff as i32,
        rot: c.rope_dims as i32,
        neox: c.rope_neox as i32,
        base: c.rope_base,
        eps: c.eps,
        scale: c.attn_scale,
        slot_bytes: slot as i32,
        kv_cap: kv_cap as i32,
    };
    Ok(ClusterPlan { kernel: format!("cluster_layers_k{kind}_h{hd}"), smem, shape })
}

/// The kernel's table: the shape (padded to SHAPE_BYTES), then one row per layer.
pub(super) fn table_bytes(plan: &ClusterPlan, layers: &[ClusterLayer]) -> Vec<u8> {
    let mut out = vec![0u8; SHAPE_BYTES];
    out[..std::mem::size_of::<ClusterShape>()].copy_from_slice(bytemuck_bytes(&plan.shape));
    for l in layers {
        out.extend_from_slice(bytemuck_bytes(l));
    }
    out
}

/// The bytes of a plain-old-data value (both structs are `repr(C)` of 4- and 8-byte fields
/// without implicit padding).
fn bytemuck_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is one of this module's repr(C) structs, whose fields leave no padding
    // (checked by the size test below), so every byte is initialized.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
}

/// Whether the path is on (`CMF_CUDA_CLUSTER=1`; default off).
pub(super) fn enabled() -> bool {
    std::env::var("CMF_CUDA_CLUSTER").is_ok_and(|v| v.trim() == "1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Family;

    fn smollm2() -> LlamaConfig {
        LlamaConfig { family: Family::Llama, n_embd: 576, n_ff: 1536, n_layer: 30, n_head: 9, n_head_kv: 3, head_dim: 64, rope_dims: 64, rope_base: 100000.0, rope_neox: false, eps: 1e-5, n_ctx_train: 8192, vocab: 49152, embed_scale: 1.0, attn_scale: 0.125, act: Activation::Silu, qk_norm: false, post_norms: false, sliding: None }
    }

    #[test]
    fn the_structs_have_the_kernels_layout() {
        assert_eq!(std::mem::size_of::<ClusterShape>(), 52);
        assert!(std::mem::size_of::<ClusterShape>() <= SHAPE_BYTES);
        assert_eq!(std::mem::size_of::<ClusterLayer>(), 120);
    }

    #[test]
    fn smollm2_q4_fits_and_q8_does_not_on_the_h200() {
        let limit = 232_448 - 512;
        let q4 = plan(&smollm2(), 0, limit).expect("smollm2 q4_0 fits");
        // Gate and up of 96 hidden values each over 18 units: 2 x (27 648 + 3 472) + the norm.
        assert_eq!(q4.shape.slot_bytes, 64_544);
        assert_eq!(q4.shape.kv_cap, 64_544 / (4 * 192), "K and V rows of 192 f16 values");
        assert_eq!(q4.kernel, "cluster_layers_k0_h64");
        assert!(KERNELS.contains(&q4.kernel.as_str()));
        assert!(plan(&smollm2(), 1, limit).is_ok());
        assert!(plan(&smollm2(), 2, limit).is_err(), "Q8_0's two gate/up slots are 2 x 117 KB");
    }

    #[test]
    fn a_synthesized_smollm2_gets_a_plan_with_its_own_attention_scale() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smollm2.gguf");
        crate::synth::synth("smollm2-135m", "q4_0", &path, 3).unwrap();
        let model = crate::generate::Engine::load(&path).unwrap().model;
        let p = plan(&model.cfg, 0, 232_448 - 512).expect("the loaded config is admitted");
        assert_eq!(p.shape.scale, model.cfg.attn_scale);
        assert_eq!(p.shape.n_layer, 30);
    }

    #[test]
    fn models_too_large_for_one_cluster_are_declined() {
        let mut c = smollm2();
        (c.n_embd, c.n_ff, c.n_head, c.n_head_kv) = (2048, 8192, 32, 8);
        assert!(plan(&c, 0, 232_448).is_err());
        let mut c = smollm2();
        c.head_dim = 48;
        assert!(plan(&c, 0, 232_448).is_err());
    }

    #[test]
    fn the_table_starts_with_the_shape_then_a_row_a_layer() {
        let p = plan(&smollm2(), 0, 232_448).unwrap();
        let rows = vec![ClusterLayer { w: [7; 7], ..Default::default() }; 3];
        let t = table_bytes(&p, &rows);
        assert_eq!(t.len(), SHAPE_BYTES + 3 * 120);
        assert_eq!(&t[..4], &30i32.to_le_bytes());
        assert_eq!(&t[SHAPE_BYTES..SHAPE_BYTES + 8], &7u64.to_le_bytes());
    }
}
