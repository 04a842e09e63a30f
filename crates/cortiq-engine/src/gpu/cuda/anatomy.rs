//! Profiling knobs that take parts of the decode token away, so that its GPU time per token
//! (`CMF_GRAPH_HOSTPROF=1`) shows what they cost in the captured chain. Outputs are wrong
//! while one is set; `bench/cuda-anatomy.sh` runs them and tabulates the differences.
//! - `CMF_GRAPH_SKIP=qkv,attn,o,glu,down`: those stages' launches are left out of every layer.
//! - `CMF_CUDA_DEFINES=CORTIQ_NO_STAGING,CORTIQ_NO_STREAM`: the kernels are compiled with
//!   switches that leave out, in every row kernel, the activation staging (a barrier stays)
//!   or the weight stream and its dot products (`run_rows` in matvec.cu).

/// The stages of a layer `CMF_GRAPH_SKIP` names, in launch order.
pub(super) const STAGES: [&str; 5] = ["qkv", "attn", "o", "glu", "down"];
/// The kernel switches `CMF_CUDA_DEFINES` may set.
pub(super) const DEFINES: [&str; 2] = ["CORTIQ_NO_STAGING", "CORTIQ_NO_STREAM"];

/// Which parts of the token are left out (none by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Anatomy {
    skip: Vec<&'static str>,
    defines: Vec<&'static str>,
}

impl Anatomy {
    /// The knobs as the environment sets them.
    pub(super) fn from_env() -> Result<Anatomy, String> {
        Anatomy::parse(std::env::var("CMF_GRAPH_SKIP").ok().as_deref(), std::env::var("CMF_CUDA_DEFINES").ok().as_deref())
    }

    /// The knobs from their settings (comma-separated names); an unknown name is an error
    /// that lists the known ones.
    pub(super) fn parse(skip: Option<&str>, defines: Option<&str>) -> Result<Anatomy, String> {
        fn names(var: &str, value: Option<&str>, known: &[&'static str]) -> Result<Vec<&'static str>, String> {
            let mut out = Vec::new();
            for name in value.unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let k = known.iter().find(|k| **k == name).ok_or_else(|| format!("{var}: unknown name {name:?} (known: {})", known.join(", ")))?;
                if !out.contains(k) {
                    out.push(*k);
                }
            }
            Ok(out)
        }
        Ok(Anatomy { skip: names("CMF_GRAPH_SKIP", skip, &STAGES)?, defines: names("CMF_CUDA_DEFINES", defines, &DEFINES)? })
    }

    /// Whether the token graph launches `stage` (one of `STAGES`).
    pub(super) fn runs(&self, stage: &str) -> bool {
        !self.skip.contains(&stage)
    }

    /// The `#define` lines the kernel source starts with.
    pub(super) fn source_defines(&self) -> String {
        self.defines.iter().map(|d| format!("#define {d}\n")).collect()
    }

    /// A one-line warning when anything is left out, for `cortiq gpu` and the log.
    pub(super) fn warning(&self) -> Option<String> {
        if self.skip.is_empty() && self.defines.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if !self.skip.is_empty() {
            parts.push(format!("stages left out: {}", self.skip.join(", ")));
        }
        if !self.defines.is_empty() {
            parts.push(format!("kernel switches: {}", self.defines.join(", ")));
        }
        Some(format!("profiling knobs set ({}): outputs are wrong, timings only", parts.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::Anatomy;

    #[test]
    fn the_knobs_parse_known_names_and_name_unknown_ones() {
        let none = Anatomy::parse(None, Some("")).unwrap();
        assert_eq!(none, Anatomy::default());
        assert!(none.runs("attn") && none.warning().is_none() && none.source_defines().is_empty());
        let a = Anatomy::parse(Some("attn, o,attn"), Some("CORTIQ_NO_STREAM")).unwrap();
        assert!(!a.runs("attn") && !a.runs("o") && a.runs("qkv"));
        assert_eq!(a.source_defines(), "#define CORTIQ_NO_STREAM\n");
        assert!(a.warning().is_some_and(|w| w.contains("attn, o") && w.contains("CORTIQ_NO_STREAM")));
        let bad = Anatomy::parse(Some("ffn"), None).unwrap_err();
        assert!(bad.contains("CMF_GRAPH_SKIP") && bad.contains("\"ffn\"") && bad.contains("glu"), "{bad}");
        assert!(Anatomy::parse(None, Some("DEBUG")).unwrap_err().contains("CMF_CUDA_DEFINES"));
    }
}
