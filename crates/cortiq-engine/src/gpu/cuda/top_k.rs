//! The sampler's candidates picked on the device (topk.cu): a sampled decode token reads
//! back k keys (`gpu::candidates`) instead of the whole vocabulary's logits, and the host's
//! sampler works on them as it would on `sample::top_candidates` of the full logits. For a
//! token queued ahead (`graph.rs`) the device also picks the next token as the host will:
//! the argmax, or the draw from the candidates by the sampler's spec.

use super::launch::{launch, KernelArgs};
use super::{err, CudaBackend};
use crate::gpu::candidates::PickedAndDrawn;
use crate::sample::DrawSpec;
use cudarc::driver::{CudaSlice, CudaStream, CudaView, DevicePtr, LaunchConfig};
use std::sync::Arc;

/// Largest k the device picks (topk.cu's `TOPK_MAX`); larger requests read the logits back.
pub(crate) const TOPK_MAX: usize = crate::gpu::candidates::DEVICE_TOP_K_MAX;
/// Logits each lane of `topk_warps` holds in registers (a warp's slice: 32 times this).
const TOPK_PER_LANE: usize = 16;
/// Warps of a `topk_warps` block (each with a shared buffer of 32 * TOPK_PER_LANE keys).
const TOPK_BLOCK_WARPS: usize = 8;
/// Keys `topk_merge` gathers into shared memory (8 bytes each).
const TOPK_KEEP: usize = 2048;
/// Threads of the one `topk_merge` block.
const TOPK_THREADS: u32 = 1024;
/// Keys each `topk_merge` thread loads at once while gathering (llama-1b's 251 warps' lists
/// of 40 keys: two batches a thread).
const TOPK_GATHER: usize = 8;

/// The kernels' sizes, as the defines topk.cu is compiled with.
pub(super) fn defines() -> String {
    format!("#define TOPK_MAX {TOPK_MAX}\n#define TOPK_PER_LANE {TOPK_PER_LANE}\n#define TOPK_BLOCK_WARPS {TOPK_BLOCK_WARPS}\n#define TOPK_KEEP {TOPK_KEEP}\n#define TOPK_THREADS {TOPK_THREADS}\n#define TOPK_GATHER {TOPK_GATHER}\n")
}

/// The kernels this module launches.
pub(super) const KERNELS: [&str; 3] = ["topk_warps", "topk_merge", "pick_argmax"];

/// Warps `topk_warps` runs over `n` logits: one per slice of 32 * TOPK_PER_LANE.
pub(super) fn warps(n: usize) -> usize {
    n.div_ceil(32 * TOPK_PER_LANE)
}

/// Device scratch for the picks over `vocab` logits.
pub(super) struct TopKBuffers {
    part: CudaSlice<u64>, // (warps(vocab), TOPK_MAX) each warp's keys
    /// (TOPK_MAX) the k largest keys, descending, where a caller keeps no keys of its own.
    pub keys: CudaSlice<u64>,
}

impl TopKBuffers {
    pub fn new(backend: &CudaBackend, vocab: usize) -> Result<TopKBuffers, String> {
        let s = &backend.stream;
        Ok(TopKBuffers { part: s.alloc_zeros::<u64>(warps(vocab) * TOPK_MAX).map_err(err)?, keys: s.alloc_zeros::<u64>(TOPK_MAX).map_err(err)? })
    }
}

/// How the device picks the next token after a decode token: the argmax of the logits
/// (`pick_argmax` in topk.cu), or a draw from the k candidates by the sampler's spec with the
/// uniform draw `u` (`topk_merge`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum NextPick {
    Argmax,
    Draw { spec: DrawSpec, u: f32 },
}

/// Where the device writes its pick of the next token: the graph's [token, position] (the
/// position moved on by one) and the host's copy.
pub(super) struct PickTo<'a> {
    pub params: &'a CudaSlice<i32>,
    pub pick: CudaView<'a, i32>,
}

impl PickTo<'_> {
    /// Whether the buffers hold what the kernels write (two params, one pick).
    fn fits(&self) -> bool {
        self.params.len() >= 2 && !self.pick.is_empty()
    }
}

impl CudaBackend {
    /// Queue the picks of the k (1..=TOPK_MAX) largest finite values of `logits` (vocab) into
    /// `keys` (at least k keys, descending; `gpu::candidates` reads them) with `buf`'s scratch,
    /// and with `draw` (the sampler's spec and its uniform draw) the token drawn from them.
    pub(super) fn queue_top_k(&self, logits: &CudaSlice<f32>, buf: &TopKBuffers, k: usize, keys: &impl DevicePtr<u64>, draw: Option<(&DrawSpec, f32, PickTo)>) -> Result<(), String> {
        let s = &self.stream;
        let n = logits.len();
        let w = warps(n);
        if !(1..=TOPK_MAX).contains(&k) || buf.part.len() < w * TOPK_MAX || keys.len() < k {
            return Err(format!("top-{k} of {n} logits: outside the picks' range or scratch"));
        }
        if draw.as_ref().is_some_and(|(_, _, to)| !to.fits()) {
            return Err("the next token's draw: its buffers are too small".into());
        }
        let mut a = KernelArgs::default();
        a.buf(logits, s).int(n as i32).int(k as i32).buf(&buf.part, s);
        let warp_cfg = LaunchConfig { grid_dim: (w.div_ceil(TOPK_BLOCK_WARPS) as u32, 1, 1), block_dim: (32 * TOPK_BLOCK_WARPS as u32, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: part holds warps(n) * TOPK_MAX >= warps(n) * k keys, the grid covers every
        // warp, and the arguments follow topk_warps's parameters.
        unsafe { launch(s, &self.funcs["topk_warps"], warp_cfg, &a, false) }.map_err(err)?;
        let mut a = KernelArgs::default();
        a.buf(&buf.part, s).int(w as i32).int(k as i32).buf(keys, s);
        match &draw {
            Some((spec, u, to)) => a.int(1).float(spec.temperature).float(spec.min_p).float(spec.top_p).float(*u).buf(to.params, s).buf(&to.pick, s),
            None => a.int(0).float(1.0).float(0.0).float(1.0).float(0.0).null().null(),
        };
        let merge_cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (TOPK_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: reads the w * k keys topk_warps wrote, writes k <= keys.len() keys and, with
        // a draw, params[0..2] and pick[0] (checked above); the arguments follow topk_merge's
        // parameters.
        unsafe { launch(s, &self.funcs["topk_merge"], merge_cfg, &a, false) }.map_err(err)
    }

    /// Queue the device's greedy pick of the next token (the argmax key in `best`) into `to`.
    pub(super) fn queue_argmax_pick(&self, best: &CudaSlice<u64>, to: PickTo) -> Result<(), String> {
        let s = &self.stream;
        if !to.fits() {
            return Err("the next token's pick: its buffers are too small".into());
        }
        let mut a = KernelArgs::default();
        a.buf(best, s).buf(to.params, s).buf(&to.pick, s);
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: one thread reads *best, writes params[0..2] and pick[0] (checked above); the
        // arguments follow pick_argmax's parameters.
        unsafe { launch(s, &self.funcs["pick_argmax"], cfg, &a, false) }.map_err(err)
    }

    /// The k largest finite values of `values` picked by the device kernels (k in
    /// 1..=TOPK_MAX), as `sample::top_candidates` gives them, and with `draw` (a spec and
    /// its uniform draw) the token the device draws from them (for the parity tests).
    pub fn top_k(&self, values: &[f32], k: usize, draw: Option<(&DrawSpec, f32)>) -> Result<PickedAndDrawn, String> {
        let s = &self.stream;
        let logits = s.clone_htod(values).map_err(err)?;
        let buf = TopKBuffers::new(self, values.len())?;
        let (params, pick) = (s.alloc_zeros::<i32>(2).map_err(err)?, s.clone_htod(&[-1i32]).map_err(err)?);
        self.queue_top_k(&logits, &buf, k, &buf.keys, draw.map(|(spec, u)| (spec, u, PickTo { params: &params, pick: pick.slice(..) })))?;
        let drawn = draw.map(|_| s.clone_dtoh(&pick)).transpose().map_err(err)?.map(|p| p[0] as u32);
        Ok((read_candidates(s, &buf.keys, 0, k)?, drawn))
    }
}

/// The k candidates in `keys` as `sample::top_candidates` gives them, read back on `stream`.
pub(super) fn read_candidates(stream: &Arc<CudaStream>, keys: &CudaSlice<u64>, at: usize, k: usize) -> Result<Vec<(u32, f32)>, String> {
    let mut host = [0u64; TOPK_MAX];
    let k = k.min(TOPK_MAX).min(keys.len().saturating_sub(at));
    stream.memcpy_dtoh(&keys.slice(at..at + k), &mut host[..k]).map_err(err)?;
    Ok(crate::gpu::candidates::candidates(host[..k].iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn warps_cover_every_logit() {
        assert_eq!(warps(1), 1);
        assert_eq!(warps(512), 1);
        assert_eq!(warps(513), 2);
        assert_eq!(warps(128_256), 251);
    }
}
