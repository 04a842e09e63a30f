//! The token graph's fused FFN (`ffn_fused` in graph.cu): gate/up and the down projection in
//! one launch, so no kernel boundary and no cold start of down's weight stream. Block b takes
//! NU hidden units of 32 values, forms them as gate_up_q8 does but into its own shared
//! memory, then adds those units' columns of down into the residual. The blocks' shares of
//! one output value meet by integer atomics on a fixed-point copy (the "pending part": 2^-26
//! a unit, so the sum has the same bits in any order of adds and a decode stays
//! deterministic); the next layer's QKV kernel (and the head) stage x plus the pending part,
//! and the next output projection folds it into x and zeroes it. Down is held a second time,
//! unit-major (`planar::repack_unit_major`), so a block's columns are contiguous.
//!
//! The adds are what it costs: on the H200 (NOTES.md, session 38; tg128 after a 512-token
//! prompt) it decodes smollm2 (48 blocks x 576 adds a layer) 0.9-2.5 % faster than the two
//! launches, but llama-1b (256 x 2048) 7 % and llama-8b (224 x 4096) 13 % slower, and without
//! its adds (`CORTIQ_FFN_NO_REDUCE`, outputs wrong) llama-1b would be 1.9 % faster. So it is
//! taken where a layer's adds are few (`MAX_ADDS`); `CMF_CUDA_FFN_FUSED=1` takes it wherever
//! the kernels can, `0` nowhere.

/// Hidden units a block may take (kernel instantiations `ffn_fused_k{K}_n{NU}`).
pub(super) const UNITS_PER_BLOCK: [usize; 3] = [1, 2, 4];
/// The codec kinds `ffn_fused` is instantiated for (Q4_0, Q4_1, Q8_0 / Q5_0: its down
/// projection reads their unit-major layout).
pub(super) const KINDS: [i32; 3] = [0, 1, 2];

/// Most adds into the pending part a layer (hidden units x n_embd, an upper bound on blocks x
/// n_embd) at which the fused FFN is taken by default: smollm2's 27 648 measured faster,
/// llama-1b's 524 288 slower.
pub(super) const MAX_ADDS: usize = 65_536;

/// Where the fused FFN is taken: by the size rule, everywhere the kernels can, or nowhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fusing {
    BySize,
    Always,
    Never,
}

impl Fusing {
    /// The setting of `CMF_CUDA_FFN_FUSED` (unset: by size), or why it is not one.
    pub(super) fn parse(value: Option<&str>) -> Result<Fusing, String> {
        match value.map(str::trim) {
            None | Some("") => Ok(Fusing::BySize),
            Some("1") => Ok(Fusing::Always),
            Some("0") => Ok(Fusing::Never),
            Some(v) => Err(format!("CMF_CUDA_FFN_FUSED={v:?}: expected 1 (wherever the kernels can), 0 (never) or unset (where a layer's adds are few)")),
        }
    }

    /// Whether an FFN of `n_ff` hidden values over rows of `n_embd` values is fused.
    pub(super) fn takes(self, n_ff: usize, n_embd: usize) -> bool {
        match self {
            Fusing::BySize => n_ff / 32 * n_embd <= MAX_ADDS,
            Fusing::Always => true,
            Fusing::Never => false,
        }
    }
}

/// The fused kernel of codec kind `kind` whose blocks take `nu` hidden units.
pub(super) fn kernel(kind: i32, nu: usize) -> String {
    format!("ffn_fused_k{kind}_n{nu}")
}

/// Hidden units a block takes for `units` units of 32 hidden values when at most `cap`
/// blocks fit the chip at once (`cap_of(nu)`): the fewest of `UNITS_PER_BLOCK` that divide
/// `units` with the grid fitting at once, or None.
pub(super) fn units_per_block(units: usize, cap_of: impl Fn(usize) -> usize) -> Option<usize> {
    UNITS_PER_BLOCK.into_iter().find(|&nu| units.is_multiple_of(nu) && units / nu <= cap_of(nu))
}

/// The resident key of a weight's unit-major copy.
pub(super) fn unit_major_key(key: u64) -> u64 {
    key ^ 0x756e_6974_6d61_6a72
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_fuses_the_small_ffns_by_default() {
        assert_eq!(Fusing::parse(None), Ok(Fusing::BySize));
        assert_eq!(Fusing::parse(Some(" 1 ")), Ok(Fusing::Always));
        assert_eq!(Fusing::parse(Some("0")), Ok(Fusing::Never));
        assert!(Fusing::parse(Some("yes")).unwrap_err().contains("CMF_CUDA_FFN_FUSED"));
        // smollm2-135m, llama-1b, llama-8b.
        assert!(Fusing::BySize.takes(1536, 576));
        assert!(!Fusing::BySize.takes(8192, 2048));
        assert!(!Fusing::BySize.takes(14336, 4096));
        assert!(Fusing::Always.takes(14336, 4096) && !Fusing::Never.takes(1536, 576));
    }

    #[test]
    fn blocks_take_the_fewest_units_that_fit_the_chip_at_once() {
        // smollm2 (1536 hidden), llama-1b (8192), llama-8b (14336) on 132 SMs, 2 blocks an SM.
        assert_eq!(units_per_block(48, |_| 264), Some(1));
        assert_eq!(units_per_block(256, |_| 264), Some(1));
        assert_eq!(units_per_block(448, |_| 264), Some(2));
        assert_eq!(units_per_block(448, |_| 132), Some(4));
        // More units than four a block can hold at once, or no divisor: no fused FFN.
        assert_eq!(units_per_block(448, |_| 100), None);
        assert_eq!(units_per_block(301, |_| 132), None);
        // The cap may differ by kernel (registers).
        assert_eq!(units_per_block(256, |nu| if nu == 1 { 132 } else { 264 }), Some(2));
    }

    #[test]
    fn the_unit_major_copy_has_its_own_key() {
        for key in [0u64, 1, 0xdead_beef, u64::MAX] {
            assert_ne!(unit_major_key(key), key);
            assert_eq!(unit_major_key(unit_major_key(key)), key);
        }
    }
}
