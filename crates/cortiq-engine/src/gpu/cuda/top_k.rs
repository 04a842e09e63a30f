//! The sampler's candidates picked on the device (topk.cu): a sampled decode token reads
//! back k keys (`gpu::candidates`) instead of the whole vocabulary's logits, and the host's
//! sampler works on them as it would on `sample::top_candidates` of the full logits.

use super::launch::{launch, KernelArgs};
use super::{err, CudaBackend};
use cudarc::driver::{CudaSlice, LaunchConfig};

/// Largest k the device picks (topk.cu's `TOPK_MAX`); larger requests read the logits back.
pub(crate) const TOPK_MAX: usize = crate::gpu::candidates::DEVICE_TOP_K_MAX;
/// Logits each lane of `topk_warps` holds in registers (a warp's slice: 32 times this).
const TOPK_PER_LANE: usize = 16;
/// Keys `topk_merge` gathers into shared memory (8 bytes each).
const TOPK_KEEP: usize = 2048;
/// Threads of the one `topk_merge` block.
const TOPK_THREADS: u32 = 1024;

/// The kernels' sizes, as the defines topk.cu is compiled with.
pub(super) fn defines() -> String {
    format!("#define TOPK_MAX {TOPK_MAX}\n#define TOPK_PER_LANE {TOPK_PER_LANE}\n#define TOPK_KEEP {TOPK_KEEP}\n#define TOPK_THREADS {TOPK_THREADS}\n")
}

/// The kernels this module launches.
pub(super) const KERNELS: [&str; 2] = ["topk_warps", "topk_merge"];

/// Warps `topk_warps` runs over `n` logits: one per slice of 32 * TOPK_PER_LANE.
pub(super) fn warps(n: usize) -> usize {
    n.div_ceil(32 * TOPK_PER_LANE)
}

/// Device scratch for the picks over `vocab` logits.
pub(super) struct TopKBuffers {
    part: CudaSlice<u64>, // (warps(vocab), TOPK_MAX) each warp's keys
    keys: CudaSlice<u64>, // (TOPK_MAX) the k largest keys, descending
}

impl TopKBuffers {
    pub fn new(backend: &CudaBackend, vocab: usize) -> Result<TopKBuffers, String> {
        let s = &backend.stream;
        Ok(TopKBuffers { part: s.alloc_zeros::<u64>(warps(vocab) * TOPK_MAX).map_err(err)?, keys: s.alloc_zeros::<u64>(TOPK_MAX).map_err(err)? })
    }
}

impl CudaBackend {
    /// Queue the picks over `logits` (vocab) into `buf` and read the k (1..=TOPK_MAX) largest
    /// finite ones back as `sample::top_candidates` gives them (fewer when fewer are finite).
    pub(super) fn queue_top_k(&self, logits: &CudaSlice<f32>, buf: &mut TopKBuffers, k: usize) -> Result<Vec<(u32, f32)>, String> {
        let s = &self.stream;
        let n = logits.len();
        let w = warps(n);
        if !(1..=TOPK_MAX).contains(&k) || buf.part.len() < w * TOPK_MAX {
            return Err(format!("top-{k} of {n} logits: outside the picks' range or scratch"));
        }
        let mut a = KernelArgs::default();
        a.buf(logits, s).int(n as i32).int(k as i32).buf(&buf.part, s);
        let warp_cfg = LaunchConfig { grid_dim: ((w as u32).div_ceil(8), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: part holds warps(n) * TOPK_MAX >= warps(n) * k keys, the grid covers every
        // warp, and the arguments follow topk_warps's parameters.
        unsafe { launch(s, &self.funcs["topk_warps"], warp_cfg, &a, false) }.map_err(err)?;
        let mut a = KernelArgs::default();
        a.buf(&buf.part, s).int(w as i32).int(k as i32).buf(&buf.keys, s);
        let merge_cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (TOPK_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: reads the w * k keys topk_warps wrote, writes k <= TOPK_MAX keys; the
        // arguments follow topk_merge's parameters.
        unsafe { launch(s, &self.funcs["topk_merge"], merge_cfg, &a, false) }.map_err(err)?;
        let mut keys = [0u64; TOPK_MAX];
        s.memcpy_dtoh(&buf.keys.slice(0..k), &mut keys[..k]).map_err(err)?;
        Ok(crate::gpu::candidates::candidates(keys[..k].iter().copied()))
    }

    /// The k (1..=TOPK_MAX) largest finite values of `values` picked by the device kernels,
    /// as `sample::top_candidates` gives them (for the parity tests).
    pub fn top_k(&self, values: &[f32], k: usize) -> Result<Vec<(u32, f32)>, String> {
        let logits = self.stream.clone_htod(values).map_err(err)?;
        let mut buf = TopKBuffers::new(self, values.len())?;
        self.queue_top_k(&logits, &mut buf, k)
    }
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
