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
