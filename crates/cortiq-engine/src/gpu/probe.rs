//! Measured GPU-vs-CPU arbitration per op class (SPEC section 4), and the on-disk verdict
//! cache. The decision rules are plain functions of the samples, so tests drive them with
//! synthetic timings; the facade feeds them real ones.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Op classes, each probed on its own (offload pays off differently for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpClass {
    /// A whole FFN chain in one submission.
    Ffn,
    /// One large matvec (decode).
    Matvec,
    /// Prefill GEMM.
    Matmat,
    /// Several matvecs of one input.
    QkvBatch,
    /// GEMM with batch >= 128 (image-diffusion widths).
    MatmatWide,
    /// Matvecs with rows * cols >= 64 Mi: the head.
    LmHead,
    /// f32 NT GEMM of attention slices.
    GemmNt,
    /// Host-routed MoE block.
    Moe,
}

pub const ALL_CLASSES: [OpClass; 8] = [OpClass::Ffn, OpClass::Matvec, OpClass::Matmat, OpClass::QkvBatch, OpClass::MatmatWide, OpClass::LmHead, OpClass::GemmNt, OpClass::Moe];

impl OpClass {
    pub fn name(self) -> &'static str {
        match self {
            OpClass::Ffn => "ffn",
            OpClass::Matvec => "matvec",
            OpClass::Matmat => "matmat",
            OpClass::QkvBatch => "qkv-batch",
            OpClass::MatmatWide => "matmat-wide",
            OpClass::LmHead => "lm-head",
            OpClass::GemmNt => "gemm-nt",
            OpClass::Moe => "moe",
        }
    }

    pub fn from_name(s: &str) -> Option<OpClass> {
        ALL_CLASSES.into_iter().find(|c| c.name() == s)
    }

    /// Classes a long, uniform, warm loop may trust without probing (`trust_wide`).
    pub fn is_wide(self) -> bool {
        matches!(self, OpClass::MatmatWide | OpClass::GemmNt)
    }

    /// The class of a matmul of `rows` x `cols` over `batch` activation rows.
    pub fn of_matmul(rows: usize, cols: usize, batch: usize) -> OpClass {
        if rows.saturating_mul(cols) >= LM_HEAD_ELEMENTS {
            OpClass::LmHead
        } else if batch >= WIDE_BATCH {
            OpClass::MatmatWide
        } else if batch > 1 {
            OpClass::Matmat
        } else {
            OpClass::Matvec
        }
    }
}

/// rows * cols from which a matvec is head-class: an order of magnitude above the rest.
pub const LM_HEAD_ELEMENTS: usize = 64 << 20;
/// Batch from which a GEMM is "wide" (image-diffusion widths).
pub const WIDE_BATCH: usize = 128;
/// Samples needed per arm before any verdict (one sample can be a fluke).
pub const MIN_SAMPLES: usize = 2;
/// One arm at least this many times faster decides early.
pub const EARLY_RATIO: f64 = 2.0;
/// Clean samples per arm after which the faster arm wins.
pub const FULL_SAMPLES: usize = 6;
/// Declines after which a class settles on the CPU (it records no time and would never decide).
pub const DECLINE_LIMIT: usize = 16;
/// Tensors the probe may upload per class while it is undecided (a machine where the GPU
/// loses must not upload the whole model first; per class, so that each class, an FFN job
/// being three tensors, can reach its samples).
pub const PROBE_UPLOAD_CAP: usize = 4;

/// Where a class runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Gpu,
    Cpu,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Gpu => "gpu",
            Verdict::Cpu => "cpu",
        }
    }
}

/// Which arm an undecided class runs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    Gpu,
    Cpu,
}

/// One class's probe: samples of both arms and the verdict once reached.
#[derive(Debug, Clone, Default)]
pub struct ClassProbe {
    pub gpu: Vec<Duration>,
    pub cpu: Vec<Duration>,
    pub declines: usize,
    /// Tensors uploaded by this class's probe calls.
    pub uploads: usize,
    /// GPU samples seen so far, discarded ones included (the first is the warm-up).
    gpu_seen: usize,
    next_gpu: bool,
    pub verdict: Option<Verdict>,
    /// Set when the verdict was reached now (to log it once).
    pub fresh: bool,
}

impl ClassProbe {
    /// The arm the next undecided call takes (GPU first, then alternating).
    pub fn next_arm(&mut self) -> Arm {
        let arm = if self.gpu_seen == 0 || self.next_gpu { Arm::Gpu } else { Arm::Cpu };
        self.next_gpu = arm == Arm::Cpu;
        arm
    }

    /// Record a GPU sample. Cold samples (paid an upload, buffer creation or pipeline
    /// build) and the first GPU sample of the class (warm-up) are discarded.
    pub fn record_gpu(&mut self, t: Duration, cold: bool) {
        self.gpu_seen += 1;
        if !cold && self.gpu_seen > 1 {
            self.gpu.push(t);
        }
        self.decide();
    }

    pub fn record_cpu(&mut self, t: Duration) {
        self.cpu.push(t);
        self.decide();
    }

    /// The device arm declined: no time recorded; enough of them settle on the CPU.
    pub fn record_decline(&mut self) {
        self.declines += 1;
        if self.verdict.is_none() && self.declines >= DECLINE_LIMIT {
            self.verdict = Some(Verdict::Cpu);
            self.fresh = true;
        }
    }

    fn decide(&mut self) {
        if self.verdict.is_some() {
            return;
        }
        if let Some(v) = decide(&self.gpu, &self.cpu) {
            self.verdict = Some(v);
            self.fresh = true;
        }
    }

    pub fn best_gpu(&self) -> Option<Duration> {
        self.gpu.iter().min().copied()
    }

    pub fn best_cpu(&self) -> Option<Duration> {
        self.cpu.iter().min().copied()
    }
}

/// The decision rule on clean samples: compare each arm's best (minimum) sample; need
/// `MIN_SAMPLES` per arm; decide early at `EARLY_RATIO`; else at `FULL_SAMPLES` per arm the
/// faster wins, ties to the GPU.
pub fn decide(gpu: &[Duration], cpu: &[Duration]) -> Option<Verdict> {
    if gpu.len() < MIN_SAMPLES || cpu.len() < MIN_SAMPLES {
        return None;
    }
    let g = gpu.iter().min()?.as_secs_f64();
    let c = cpu.iter().min()?.as_secs_f64();
    if c >= EARLY_RATIO * g {
        return Some(Verdict::Gpu);
    }
    if g >= EARLY_RATIO * c {
        return Some(Verdict::Cpu);
    }
    if gpu.len() >= FULL_SAMPLES && cpu.len() >= FULL_SAMPLES {
        return Some(if g <= c { Verdict::Gpu } else { Verdict::Cpu });
    }
    None
}

/// The verdict cache file: lines `version \t device \t class \t gpu|cpu`.
#[derive(Debug, Clone)]
pub struct VerdictCache {
    pub path: Option<PathBuf>,
}

/// Verdicts read back from the cache for this engine version and device.
pub type Remembered = HashMap<OpClass, Verdict>;

/// The cache file name inside the cache directory.
pub const CACHE_FILE: &str = "cortiq-gpu-probe.tsv";

impl VerdictCache {
    /// `CMF_PROBE_CACHE`: a path, `0` = off; unset = `<cache dir>/cortiq-gpu-probe.tsv`.
    pub fn from_env(value: Option<&str>, cache_dir: &Path) -> VerdictCache {
        match value {
            Some("0") => VerdictCache { path: None },
            Some(p) if !p.is_empty() => VerdictCache { path: Some(PathBuf::from(p)) },
            _ => VerdictCache { path: Some(cache_dir.join(CACHE_FILE)) },
        }
    }

    /// Verdicts for (version, device). Junk, other versions and other devices are inert; an
    /// unreadable file reads as empty.
    pub fn load(&self, version: &str, device: &str) -> Remembered {
        let Some(path) = &self.path else { return Remembered::new() };
        let Ok(bytes) = std::fs::read(path) else { return Remembered::new() };
        parse_cache(&String::from_utf8_lossy(&bytes), version, device)
    }

    /// Add or replace the line for (version, device, class). Errors (read-only directory)
    /// are returned for the caller to log once; they cost a re-probe next time, nothing more.
    pub fn store(&self, version: &str, device: &str, class: OpClass, verdict: Verdict) -> std::io::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        let old = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let mut lines: Vec<String> = old
            .lines()
            .filter(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                !(f.len() == 4 && f[0] == version && f[1] == device && f[2] == class.name())
            })
            .map(str::to_string)
            .collect();
        lines.push(format!("{version}\t{}\t{}\t{}", sanitize(device), class.name(), verdict.name()));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tsv.tmp");
        std::fs::write(&tmp, lines.join("\n") + "\n")?;
        std::fs::rename(&tmp, path)
    }
}

/// Device names go into a tab-separated line: no tabs or newlines.
fn sanitize(device: &str) -> String {
    device.replace(['\t', '\n', '\r'], " ")
}

/// Parse cache text for one (version, device).
pub fn parse_cache(text: &str, version: &str, device: &str) -> Remembered {
    let device = sanitize(device);
    let mut out = Remembered::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 4 || f[0] != version || f[1] != device {
            continue;
        }
        let verdict = match f[3] {
            "gpu" => Verdict::Gpu,
            "cpu" => Verdict::Cpu,
            _ => continue,
        };
        if let Some(c) = OpClass::from_name(f[2]) {
            out.insert(c, verdict);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    #[test]
    fn rule_need_two_samples_per_arm() {
        assert_eq!(decide(&[ms(1.0)], &[ms(100.0), ms(100.0)]), None);
        assert_eq!(decide(&[ms(1.0), ms(1.0)], &[ms(100.0)]), None);
    }

    #[test]
    fn rule_decide_early_at_two_x() {
        assert_eq!(decide(&[ms(1.0), ms(1.2)], &[ms(2.0), ms(2.1)]), Some(Verdict::Gpu));
        assert_eq!(decide(&[ms(4.0), ms(4.0)], &[ms(2.0), ms(2.0)]), Some(Verdict::Cpu));
        assert_eq!(decide(&[ms(1.0), ms(1.0)], &[ms(1.9), ms(1.9)]), None, "1.9x is not early");
    }

    #[test]
    fn rule_decide_on_best_sample_not_mean() {
        // One page-in tripled a CPU sample; the best CPU sample still wins.
        let cpu = [ms(3.0), ms(1.0), ms(1.0), ms(1.0), ms(1.0), ms(1.0)];
        let gpu = [ms(1.5); 6];
        assert_eq!(decide(&gpu, &cpu), Some(Verdict::Cpu));
    }

    #[test]
    fn rule_six_samples_then_faster_wins_ties_to_gpu() {
        assert_eq!(decide(&[ms(1.0); 5], &[ms(1.1); 5]), None);
        assert_eq!(decide(&[ms(1.0); 6], &[ms(1.1); 6]), Some(Verdict::Gpu));
        assert_eq!(decide(&[ms(1.2); 6], &[ms(1.1); 6]), Some(Verdict::Cpu));
        assert_eq!(decide(&[ms(1.0); 6], &[ms(1.0); 6]), Some(Verdict::Gpu), "ties go to the GPU");
    }

    #[test]
    fn rule_first_gpu_sample_and_cold_samples_are_discarded() {
        let mut p = ClassProbe::default();
        p.record_gpu(ms(117.0), false); // warm-up: a shader compile
        assert!(p.gpu.is_empty());
        p.record_gpu(ms(50.0), true); // cold: weight upload
        assert!(p.gpu.is_empty());
        p.record_gpu(ms(3.2), false);
        assert_eq!(p.gpu, vec![ms(3.2)]);
    }

    #[test]
    fn rule_arms_alternate_gpu_first() {
        let mut p = ClassProbe::default();
        assert_eq!(p.next_arm(), Arm::Gpu);
        p.record_gpu(ms(1.0), false);
        let arms: Vec<Arm> = (0..4).map(|_| p.next_arm()).collect();
        assert_eq!(arms, vec![Arm::Cpu, Arm::Gpu, Arm::Cpu, Arm::Gpu]);
    }

    #[test]
    fn rule_sixteen_declines_settle_on_cpu() {
        let mut p = ClassProbe::default();
        for _ in 0..DECLINE_LIMIT - 1 {
            p.record_decline();
        }
        assert_eq!(p.verdict, None);
        p.record_decline();
        assert_eq!(p.verdict, Some(Verdict::Cpu));
    }

    #[test]
    fn matmul_classes_follow_shape() {
        assert_eq!(OpClass::of_matmul(128256, 2048, 1), OpClass::LmHead);
        assert_eq!(OpClass::of_matmul(4096, 4096, 1), OpClass::Matvec);
        assert_eq!(OpClass::of_matmul(4096, 4096, 512), OpClass::MatmatWide);
        assert_eq!(OpClass::of_matmul(4096, 4096, 64), OpClass::Matmat);
    }

    #[test]
    fn verdict_cache_round_trips_and_ignores_junk_other_versions_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let cache = VerdictCache { path: Some(dir.path().join(CACHE_FILE)) };
        cache.store("0.1.0", "NVIDIA H200", OpClass::Ffn, Verdict::Gpu).unwrap();
        cache.store("0.1.0", "NVIDIA H200", OpClass::Ffn, Verdict::Cpu).unwrap();
        cache.store("0.1.0", "Other GPU", OpClass::Matvec, Verdict::Gpu).unwrap();
        let mut text = std::fs::read_to_string(dir.path().join(CACHE_FILE)).unwrap();
        text.push_str("0.0.9\tNVIDIA H200\tmatvec\tgpu\ngarbage line\n0.1.0\tNVIDIA H200\tunknown-class\tgpu\n0.1.0\tNVIDIA H200\tmatmat\tmaybe\n0.1.0\tNVIDIA H200\tlm-he");
        std::fs::write(dir.path().join(CACHE_FILE), format!("{text}\u{0}\u{ff}binary")).unwrap();
        let got = cache.load("0.1.0", "NVIDIA H200");
        assert_eq!(got.len(), 1);
        assert_eq!(got[&OpClass::Ffn], Verdict::Cpu, "the newest line for a class wins");
        assert!(VerdictCache { path: None }.load("0.1.0", "NVIDIA H200").is_empty());
        std::fs::write(dir.path().join("binary.tsv"), [0u8, 159, 146, 150, 255]).unwrap();
        assert!(VerdictCache { path: Some(dir.path().join("binary.tsv")) }.load("0.1.0", "x").is_empty());
    }

    #[test]
    fn read_only_cache_dir_is_an_error_to_log_not_a_failure() {
        let cache = VerdictCache { path: Some(PathBuf::from("/proc/cortiq-cannot-write/cortiq-gpu-probe.tsv")) };
        assert!(cache.store("v", "d", OpClass::Ffn, Verdict::Gpu).is_err());
        assert!(cache.load("v", "d").is_empty());
    }

    #[test]
    fn cmf_probe_cache_env_values() {
        let d = Path::new("/cache");
        assert_eq!(VerdictCache::from_env(None, d).path, Some(PathBuf::from("/cache/cortiq-gpu-probe.tsv")));
        assert_eq!(VerdictCache::from_env(Some("0"), d).path, None);
        assert_eq!(VerdictCache::from_env(Some("/x/y.tsv"), d).path, Some(PathBuf::from("/x/y.tsv")));
    }
}
