//! The CUDA kernels' profiling switches: `CMF_CUDA_DEFINES=CORTIQ_NO_STAGING,CORTIQ_NO_STREAM`
//! compiles every row kernel (`run_rows` in matvec.cu) without its activation staging (a
//! barrier stays) or without its weight stream and dot products, and `CORTIQ_ATT_NO_MERGE`
//! the split attention (graph.cu) without its merge step (the partials are written and
//! `attention_merge` ends at once: its launch and wait stay), so the GPU time per token
//! (`CMF_GRAPH_HOSTPROF=1`) shows what those parts cost in the captured chain. Outputs are
//! wrong while one of those is set; `bench/anatomy.sh` runs it with the stage ablation
//! (`gpu/stage_skip.rs`) and tabulates both. `CORTIQ_TRACE` leaves outputs right and records
//! the decode kernels' block timeline (`trace.rs`, `bench/timeline.sh`; with
//! `CMF_CUDA_CLUSTER=1` the cluster kernel's stage marks, `bench/cluster_timeline.py`); beside it
//! `CORTIQ_TRACE_LOADED` / `CORTIQ_TRACE_STAGED` / `CORTIQ_TRACE_DOTTED` start a row kernel's
//! block time when its normed activation row's loads are back / the row is staged / its dot
//! products are done instead of at its wait release, so two timelines give a phase's time.
//! For the fused FFN (`ffn.rs`), `CORTIQ_FFN_NO_REDUCE` drops its blocks' adds into the
//! pending part (outputs wrong) and `CORTIQ_FFN_NO_PREFETCH` its L2 prefetch of the down
//! columns (outputs right).

use crate::gpu::stage_skip::known_names;

/// The switches `CMF_CUDA_DEFINES` may set.
pub(super) const DEFINES: [&str; 9] = ["CORTIQ_NO_STAGING", "CORTIQ_NO_STREAM", "CORTIQ_ATT_NO_MERGE", "CORTIQ_TRACE", "CORTIQ_TRACE_LOADED", "CORTIQ_TRACE_STAGED", "CORTIQ_TRACE_DOTTED", "CORTIQ_FFN_NO_REDUCE", "CORTIQ_FFN_NO_PREFETCH"];

/// Switches the kernels are compiled with (none by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct KernelSwitches(Vec<&'static str>);

impl KernelSwitches {
    /// The switches as the environment sets them.
    pub(super) fn from_env() -> Result<KernelSwitches, String> {
        KernelSwitches::parse(std::env::var("CMF_CUDA_DEFINES").ok().as_deref())
    }

    /// The switches from their setting (comma-separated names).
    pub(super) fn parse(value: Option<&str>) -> Result<KernelSwitches, String> {
        Ok(KernelSwitches(known_names("CMF_CUDA_DEFINES", value, &DEFINES)?))
    }

    /// Whether the switch `name` is set.
    pub(super) fn has(&self, name: &str) -> bool {
        self.0.contains(&name)
    }

    /// The `#define` lines the kernel source starts with.
    pub(super) fn source_defines(&self) -> String {
        self.0.iter().map(|d| format!("#define {d}\n")).collect()
    }

    /// A one-line warning when any switch is set, for `cortiq gpu` and the log.
    pub(super) fn warning(&self) -> Option<String> {
        let effect = if self.0.iter().all(|&d| d.starts_with("CORTIQ_TRACE")) {
            "a block timeline is recorded, timings perturbed"
        } else if self.0 == ["CORTIQ_FFN_NO_PREFETCH"] {
            "a profiling variant, outputs unchanged"
        } else {
            "outputs are wrong, timings only"
        };
        (!self.0.is_empty()).then(|| format!("CMF_CUDA_DEFINES compiles the kernels with {}: {effect}", self.0.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::KernelSwitches;

    #[test]
    fn the_switches_parse_known_names_and_name_unknown_ones() {
        assert_eq!(KernelSwitches::parse(None).unwrap(), KernelSwitches::default());
        assert!(KernelSwitches::default().warning().is_none() && KernelSwitches::default().source_defines().is_empty());
        let k = KernelSwitches::parse(Some("CORTIQ_NO_STREAM")).unwrap();
        assert_eq!(k.source_defines(), "#define CORTIQ_NO_STREAM\n");
        assert!(k.warning().is_some_and(|w| w.contains("CORTIQ_NO_STREAM")));
        assert!(KernelSwitches::parse(Some("DEBUG")).unwrap_err().contains("CMF_CUDA_DEFINES"));
        let trace = KernelSwitches::parse(Some("CORTIQ_TRACE")).unwrap();
        assert!(trace.has("CORTIQ_TRACE") && !k.has("CORTIQ_TRACE"));
        assert!(trace.warning().is_some_and(|w| w.contains("timeline") && !w.contains("wrong")));
        let staged = KernelSwitches::parse(Some("CORTIQ_TRACE,CORTIQ_TRACE_STAGED")).unwrap();
        assert!(staged.warning().is_some_and(|w| w.contains("timeline") && !w.contains("wrong")));
        let mixed = KernelSwitches::parse(Some("CORTIQ_TRACE,CORTIQ_NO_STAGING")).unwrap();
        assert!(mixed.warning().is_some_and(|w| w.contains("wrong")));
    }
}
