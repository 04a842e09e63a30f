//! Shared memory as a cap on how many blocks of one launch share an SM. A token-graph kernel
//! launched while the kernel before still runs (programmatic dependent launch) puts its
//! blocks into the slots that kernel frees first: up to as many as fit an SM land on the
//! SMs that finish early while others hold none, and a launch's time is its most loaded
//! SM's (the block timelines of sessions 27 and 31, NOTES.md: llama-8b q4_0 down, 251 of 256
//! blocks on SMs holding three). Asking for more shared memory than the kernel stages caps
//! that at the grid's even share, so the overlap stays and the stacking goes.
//!
//! Measured on the H200 (tg128 after a 512-token prompt, `bench/results/h200-s32/call2/`):
//! launching gate/up apart instead (session 27) won 2.7 % on llama-8b q4_0 and lost 0.7 % on
//! q8_0; a fixed cap of two blocks an SM on o and down (session 31) won 3.4 %; this spread on
//! qkv, gate/up and o/down against those two, llama-1b q4_0 2249 -> 2352, llama-8b q4_0
//! 638 -> 648, smollm2 and llama-8b q8_0 unchanged. The attention kernels and the launches
//! outside the int8 chain (`gate_up_silu`, the float-input matvecs) are not spread: capping
//! attention at three an SM measured nothing, the others are unmeasured.

/// The most blocks any of `sms` SMs takes of a grid of `blocks` spread evenly.
pub(super) fn even_share(blocks: usize, sms: u32) -> u32 {
    blocks.div_ceil(sms.max(1) as usize).max(1) as u32
}

/// The least shared memory in `lo..=hi` at which `fit` (blocks an SM at a shared-memory size,
/// never more for more) is at most `per`: `lo` where it already is, `hi` where even that
/// fits more.
pub(super) fn least_smem_for(per: u32, lo: usize, hi: usize, mut fit: impl FnMut(usize) -> Result<u32, String>) -> Result<usize, String> {
    if hi <= lo || fit(lo)? <= per {
        return Ok(lo);
    }
    if fit(hi)? > per {
        return Ok(hi);
    }
    // fit(lo) > per >= fit(hi); the granularity the driver allocates in is 128 bytes.
    let (mut lo, mut hi) = (lo, hi);
    while hi - lo > 128 {
        let mid = lo + (hi - lo) / 2;
        if fit(mid)? <= per {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks an SM as the H200 reckons them: 228 KiB a SM, 1 KiB kept per block, `fixed`
    /// bytes of static shared memory, at most `regs_cap` blocks by registers.
    fn h200(fixed: usize, regs_cap: u32) -> impl Fn(usize) -> Result<u32, String> {
        move |smem| Ok(((228 * 1024) / (smem + fixed + 1024)).min(regs_cap as usize) as u32)
    }

    #[test]
    fn the_even_share_is_the_ceiling_of_blocks_over_sms() {
        assert_eq!(even_share(256, 132), 2);
        assert_eq!(even_share(264, 132), 2);
        assert_eq!(even_share(265, 132), 3);
        assert_eq!(even_share(60, 132), 1);
        assert_eq!(even_share(0, 132), 1);
    }

    #[test]
    fn the_least_smem_fits_the_share_and_no_more() {
        for (fixed, regs_cap) in [(0, 8), (4608, 4), (37 * 1024, 3)] {
            let fit = h200(fixed, regs_cap);
            for per in 1..=4u32 {
                for staged in [0, 1024, 9000, 40 * 1024] {
                    let hi = 227 * 1024;
                    let smem = least_smem_for(per, staged, hi, &fit).unwrap();
                    let blocks = fit(smem).unwrap();
                    assert!(smem >= staged && smem <= hi);
                    if fit(staged).unwrap() <= per {
                        assert_eq!(smem, staged, "per {per} staged {staged}: already at most");
                    } else {
                        assert!(blocks <= per, "per {per} staged {staged} fixed {fixed}: {blocks} fit at {smem}");
                        assert!(fit(smem - 128).unwrap() > per || smem - 128 < staged, "per {per} staged {staged}: {smem} is not the least");
                    }
                }
            }
        }
    }

    #[test]
    fn a_share_no_smem_reaches_gets_the_most_there_is() {
        let fit = |smem: usize| Ok(if smem < 1000 { 5 } else { 2 });
        assert_eq!(least_smem_for(1, 0, 1000, fit).unwrap(), 1000);
        assert_eq!(least_smem_for(1, 500, 500, fit).unwrap(), 500);
    }
}
