//! The stage ablation knob of the token graphs (both backends) and of CUDA's prefill graph:
//! `CMF_GRAPH_SKIP=qkv,attn,o,glu,down` leaves those stages out of every layer of the
//! recorded or captured token (and of every prompt chunk on CUDA), so the GPU time per token
//! (`CMF_GRAPH_HOSTPROF=1`), or the prompt's speed, shows what each costs in the real chain.
//! Outputs are wrong while it is set; `bench/anatomy.sh` runs it and tabulates the savings.
//! A stage is the work that prepares its input and the launches that use it: qkv (norm,
//! projections, RoPE, KV append), attn (attention over the mirror), o (projection and
//! residual), glu (norm, gate and up), down (SiLU(gate) * up, projection and residual).

/// The stages a layer is made of, in order.
pub const STAGES: [&str; 5] = ["qkv", "attn", "o", "glu", "down"];

/// Stages left out of the token graph (none by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageSkip(Vec<&'static str>);

impl StageSkip {
    /// The knob as the environment sets it.
    pub fn from_env() -> Result<StageSkip, String> {
        StageSkip::parse(std::env::var("CMF_GRAPH_SKIP").ok().as_deref())
    }

    /// The knob from its setting (comma-separated stage names); an unknown name is an error
    /// that lists the known ones.
    pub fn parse(value: Option<&str>) -> Result<StageSkip, String> {
        Ok(StageSkip(known_names("CMF_GRAPH_SKIP", value, &STAGES)?))
    }

    /// Whether the token graph runs `stage` (one of `STAGES`).
    pub fn runs(&self, stage: &str) -> bool {
        !self.0.contains(&stage)
    }

    /// A one-line warning when any stage is left out, for `cortiq gpu` and the log.
    pub fn warning(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| format!("CMF_GRAPH_SKIP leaves out {} in every layer: outputs are wrong, timings only", self.0.join(", ")))
    }
}

/// The names of a comma-separated setting of `var`, each one of `known` (once each, in the
/// order given); an unknown name is an error naming the variable and the known names.
pub fn known_names(var: &str, value: Option<&str>, known: &[&'static str]) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for name in value.unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let k = known.iter().find(|k| **k == name).ok_or_else(|| format!("{var}: unknown name {name:?} (known: {})", known.join(", ")))?;
        if !out.contains(k) {
            out.push(*k);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::StageSkip;

    #[test]
    fn the_skip_knob_parses_known_stages_and_names_unknown_ones() {
        let none = StageSkip::parse(Some(" ")).unwrap();
        assert_eq!(none, StageSkip::default());
        assert!(none.runs("attn") && none.warning().is_none());
        let s = StageSkip::parse(Some("attn, o,attn")).unwrap();
        assert!(!s.runs("attn") && !s.runs("o") && s.runs("qkv") && s.runs("down"));
        assert!(s.warning().is_some_and(|w| w.contains("attn, o")));
        let bad = StageSkip::parse(Some("ffn")).unwrap_err();
        assert!(bad.contains("CMF_GRAPH_SKIP") && bad.contains("\"ffn\"") && bad.contains("glu"), "{bad}");
    }
}
