//! The token graph's int8 chain: the kernel that produces a row kernel's activation row
//! writes it as an int8 image (matvec.cu's `store_unit`: the row's int8 values and group
//! scales as the consumer stages them), so the consumer copies it into shared memory
//! instead of loading floats and quantizing them itself (the staging costs 1.2-1.6 us of
//! every row kernel by the eleventh session's measurement, NOTES.md). A producer quantizes
//! a 32-value group where one block holds it whole: the attention merge's block of a head
//! (the output projection's input), and gate/up whose blocks take whole units of 32 hidden
//! values (`run_rows`' UNIT maps; the down projection's input). The values are those the
//! consumer would have quantized, so the results are bit for bit the same. The residual
//! stream's normed inputs stay f32: blocks that each take whole 32-row units of a
//! 2048-row output projection are 64 on a 132-SM card, too few to stream it (measured,
//! NOTES.md, session 22).

use super::staged_bytes;

/// Which links of the token graph carry int8 images (`CMF_CUDA_INT8_CHAIN`: a comma list of
/// `attn`, `glu`, or `0` for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Int8Chain {
    /// The split attention writes the output projection's input.
    pub attn: bool,
    /// Gate/up writes the down projection's input (its blocks take whole units of 32
    /// hidden values).
    pub glu: bool,
}

impl Int8Chain {
    /// Both links (the default).
    pub(super) const ALL: Int8Chain = Int8Chain { attn: true, glu: true };

    /// Parse a `CMF_CUDA_INT8_CHAIN` value (unset: `ALL`).
    pub(super) fn parse(value: Option<&str>) -> Result<Int8Chain, String> {
        let value = value.map(str::trim).unwrap_or("");
        if value.is_empty() {
            return Ok(Int8Chain::ALL);
        }
        if crate::gpu::selection::off_setting(Some(value)) {
            return Ok(Int8Chain { attn: false, glu: false });
        }
        let links = crate::gpu::stage_skip::known_names("CMF_CUDA_INT8_CHAIN", Some(value), &["attn", "glu"])?;
        Ok(Int8Chain { attn: links.contains(&"attn"), glu: links.contains(&"glu") })
    }

    /// The links in force for a model whose projections are all of quantized codecs
    /// (`quantized`) and whose heads are `head_dim` wide: none where the kernels cannot take
    /// them (float weights; attention's image also needs heads of whole 32-value groups).
    pub(super) fn for_model(self, quantized: bool, head_dim: usize) -> Int8Chain {
        Int8Chain { attn: self.attn && quantized && head_dim.is_multiple_of(32), glu: self.glu && quantized }
    }

    /// The setting in words (`cortiq gpu`).
    pub(super) fn describe(self) -> &'static str {
        match (self.attn, self.glu) {
            (true, true) => "attention's output and the hidden row",
            (true, false) => "attention's output",
            (false, true) => "the hidden row",
            (false, false) => "off (every row kernel quantizes its own input)",
        }
    }
}

/// Bytes of a `cols`-value row's int8 image (`store_unit` in matvec.cu): the row as a row
/// kernel stages it (`staged_bytes`), rounded up to 16.
pub(super) fn image_bytes(cols: usize) -> usize {
    staged_bytes(0, cols).next_multiple_of(16)
}

/// Blocks for a kernel whose blocks take whole output units (`run_rows`' UNIT maps) of
/// `units` units, at most `cap` blocks at once: every block the same number of units but
/// the last, none idle.
pub(super) fn unit_blocks(units: usize, cap: usize) -> usize {
    let per = units.div_ceil(cap.max(1)).max(1);
    units.div_ceil(per).max(1)
}

/// Whether a unit kernel of `units` units, `per_sm` of whose blocks fit an SM, should start
/// on an idle chip rather than overlap the kernel before it (programmatic dependent launch):
/// where its blocks take two or more units each (more units than slots), the grid leaves
/// slots empty, and an overlapping launch puts its blocks into the slots the kernel before
/// frees first, three to an SM on some while others hold none. Measured on the H200
/// (`bench/results/h200-s27/call4/`, llama-8b gate/up, the block timeline): at 3 blocks an SM
/// (q4_0) the spread launch took the stage from 23.1 to 21.5 us a layer (tg128 566 -> 581);
/// at 2 (q8_0) overlapping stacks no worse and the lost overlap cost 0.5 us (406 -> 403).
pub(super) fn unit_blocks_stack(units: usize, per_sm: u32, sms: u32) -> bool {
    per_sm >= 3 && units > per_sm as usize * sms as usize
}

/// The dynamic shared memory an image matvec (o, down) launches with: its staged row and
/// ring (`staged`), or more than a third of an SM's `sm_smem` where that is more, so at most
/// two of its blocks share an SM. Launched while the kernel before still runs, its blocks
/// otherwise took the slots freed first, three to an SM on some SMs while others held none
/// (llama-8b q4_0 down: 251 of 256 blocks on SMs holding three, `bench/results/h200-s31/call3/`);
/// capped at two, in one call on the H200 (`call4/`), tg128 llama-8b q4_0 616 -> 637,
/// llama-1b q4_0 2188 -> 2248, llama-8b q8_0 (two fit already) 427 -> 427.
pub(super) fn image_matvec_smem(staged: usize, sm_smem: usize) -> usize {
    staged.max(sm_smem / 3 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_setting_names_its_links_and_rejects_others() {
        let (none, attn, glu) = (Int8Chain { attn: false, glu: false }, Int8Chain { attn: true, glu: false }, Int8Chain { attn: false, glu: true });
        assert_eq!(Int8Chain::parse(None), Ok(Int8Chain::ALL));
        assert_eq!(Int8Chain::parse(Some("attn,glu")), Ok(Int8Chain::ALL));
        assert_eq!(Int8Chain::parse(Some("attn")), Ok(attn));
        assert_eq!(Int8Chain::parse(Some(" glu ")), Ok(glu));
        assert_eq!(Int8Chain::parse(Some("0")), Ok(none));
        let bad = Int8Chain::parse(Some("attn,residual")).unwrap_err();
        assert!(bad.contains("CMF_CUDA_INT8_CHAIN") && bad.contains("residual"), "{bad}");
        assert_eq!(Int8Chain::ALL.for_model(false, 64), none);
        assert_eq!(Int8Chain::ALL.for_model(true, 80), glu);
        assert_eq!(attn.for_model(true, 128), attn);
        assert_ne!(Int8Chain::ALL.describe(), none.describe());
    }

    #[test]
    fn an_image_is_the_staged_row() {
        // smollm2's 576 values: 576 + 12 * 18 = 792 -> 800.
        assert_eq!(image_bytes(576), 800);
        assert_eq!(image_bytes(4096), 4096 + 12 * 128);
        for cols in (32..=16384).step_by(32) {
            let b = image_bytes(cols);
            assert!(b.is_multiple_of(16) && b >= cols + 12 * (cols / 32) && b < cols + 12 * (cols / 32) + 16, "{cols}: {b}");
        }
    }

    #[test]
    fn unit_kernels_start_apart_only_where_their_blocks_would_stack_three_to_an_sm() {
        // llama-8b gate/up on the H200: 448 units; q4_0 fits 3 blocks an SM, q8_0 2.
        assert!(unit_blocks_stack(448, 3, 132));
        assert!(!unit_blocks_stack(448, 2, 132));
        // llama-1b (256 units) and smollm2 (48): a block per unit, no slot left empty by it.
        assert!(!unit_blocks_stack(256, 3, 132));
        assert!(!unit_blocks_stack(48, 4, 132));
        assert!(!unit_blocks_stack(396, 3, 132) && unit_blocks_stack(397, 3, 132));
    }

    #[test]
    fn an_image_matvec_fits_two_blocks_an_sm_and_never_three() {
        let sm = 228 * 1024;  // the H200's SM; the driver keeps 1 KiB of it per block
        let fits = |smem: usize, reserve: usize| sm / (smem + reserve);
        for staged in [1024, 20 * 1024, 60 * 1024] {
            let smem = image_matvec_smem(staged, sm);
            assert!(smem >= staged);
            assert_eq!((fits(smem, 0), fits(smem, 1024)), (2, 2), "staged {staged}");
        }
        assert_eq!(image_matvec_smem(100 * 1024, sm), 100 * 1024);
    }

    #[test]
    fn unit_blocks_share_the_units_evenly_within_the_cap() {
        assert_eq!(unit_blocks(18, 264), 18);
        assert_eq!(unit_blocks(448, 264), 224);
        assert_eq!(unit_blocks(448, 132), 112);
        assert_eq!(unit_blocks(128, 132), 128);
        for units in 1..600 {
            for cap in [1, 7, 132, 264] {
                let blocks = unit_blocks(units, cap);
                let per = units.div_ceil(blocks);
                assert!(blocks <= cap.max(1) && per * blocks >= units && per * (blocks - 1) < units, "{units} over {cap}: {blocks}");
            }
        }
    }
}
