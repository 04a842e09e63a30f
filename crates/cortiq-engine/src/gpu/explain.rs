//! Why each op ran where it did: per op class, calls, the arm that ran, the reasons, and the
//! time per arm. `cortiq run --explain` prints it.

use super::probe::{OpClass, ALL_CLASSES};
use std::collections::BTreeMap;
use std::time::Duration;

/// Why a call ran on the CPU, or that it ran on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    NoBackend,
    CpuScope,
    LayerNotAllowed,
    Paused,
    BelowMinRows,
    Contention,
    VerdictCpu,
    VerdictGpu,
    ProbeGpu,
    ProbeCpu,
    ProbeUploadCap,
    Declined,
    FailedStateless,
    Trusted,
}

impl Reason {
    pub fn text(self) -> &'static str {
        match self {
            Reason::NoBackend => "no GPU backend",
            Reason::CpuScope => "CPU scope",
            Reason::LayerNotAllowed => "layer not allowed",
            Reason::Paused => "GPU paused",
            Reason::BelowMinRows => "below min_rows",
            Reason::Contention => "contention kill",
            Reason::VerdictCpu => "verdict cpu",
            Reason::VerdictGpu => "verdict gpu",
            Reason::ProbeGpu => "probe (gpu arm)",
            Reason::ProbeCpu => "probe (cpu arm)",
            Reason::ProbeUploadCap => "probe upload cap",
            Reason::Declined => "declined",
            Reason::FailedStateless => "device error",
            Reason::Trusted => "trusted",
        }
    }
}

/// Counters of one class.
#[derive(Debug, Clone, Default)]
pub struct ClassStats {
    pub calls: u64,
    pub gpu_runs: u64,
    pub cpu_runs: u64,
    pub gpu_time: Duration,
    pub cpu_time: Duration,
    pub reasons: BTreeMap<Reason, u64>,
}

/// All classes' counters.
#[derive(Debug, Clone, Default)]
pub struct Explain {
    pub classes: BTreeMap<OpClass, ClassStats>,
    /// Decode tokens that ran as one whole-token graph, and their time.
    pub graph_tokens: u64,
    pub graph_time: Duration,
    /// Where the graphs ran a device prefix: (its layers, the model's).
    pub graph_prefix: Option<(usize, usize)>,
    /// Prompt chunks that ran as one batched prefill graph, their rows, and their time.
    pub prefill_chunks: u64,
    pub prefill_rows: u64,
    pub prefill_time: Duration,
    /// Why the backend's graphs could not be built for the model, where they could not.
    pub graph_refused: Option<&'static str>,
}

impl Explain {
    pub fn record(&mut self, class: OpClass, on_gpu: bool, reason: Reason, t: Duration) {
        let s = self.classes.entry(class).or_default();
        s.calls += 1;
        if on_gpu {
            s.gpu_runs += 1;
            s.gpu_time += t;
        } else {
            s.cpu_runs += 1;
            s.cpu_time += t;
        }
        *s.reasons.entry(reason).or_default() += 1;
    }

    /// A markdown table, one row per class that saw calls.
    pub fn table(&self, backend: &str) -> String {
        let mut out = format!("op placement (backend: {backend})\n\n| class | calls | gpu | cpu | why | gpu time | cpu time |\n| --- | --- | --- | --- | --- | --- | --- |\n");
        for c in ALL_CLASSES {
            let Some(s) = self.classes.get(&c) else { continue };
            let why: Vec<String> = s.reasons.iter().map(|(r, n)| format!("{} x{n}", r.text())).collect();
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {:.1} ms | {:.1} ms |\n",
                c.name(),
                s.calls,
                s.gpu_runs,
                s.cpu_runs,
                why.join(", "),
                s.gpu_time.as_secs_f64() * 1e3,
                s.cpu_time.as_secs_f64() * 1e3
            ));
        }
        // Under a device prefix a submission covers the leading layers only.
        const HOST: &str = "(device prefix: the weight budget holds no more), the rest on the host";
        if self.graph_tokens > 0 {
            let what = match self.graph_prefix {
                Some((run, all)) => format!("layers 0..{run} of {all} in one submission {HOST}"),
                None => "whole token in one submission".to_string(),
            };
            out.push_str(&format!("| token graph | {} | {} | 0 | {what} | {:.1} ms | 0.0 ms |\n", self.graph_tokens, self.graph_tokens, self.graph_time.as_secs_f64() * 1e3));
        }
        if self.prefill_chunks > 0 {
            let layers = self.graph_prefix.map(|(run, all)| format!(", layers 0..{run} of {all} {HOST}")).unwrap_or_default();
            out.push_str(&format!("| prefill graph | {} | {} | 0 | {} prompt rows in one submission each{layers} | {:.1} ms | 0.0 ms |\n", self.prefill_chunks, self.prefill_chunks, self.prefill_rows, self.prefill_time.as_secs_f64() * 1e3));
        }
        if let Some(why) = self.graph_refused {
            out.push_str(&format!("| graphs | - | - | - | not used: {why}; the ops above ran one by one | - | - |\n"));
        }
        if self.classes.is_empty() && self.graph_tokens == 0 && self.prefill_chunks == 0 && self.graph_refused.is_none() {
            out.push_str("| (no heavy ops ran) | | | | | | |\n");
        }
        out
    }
}
