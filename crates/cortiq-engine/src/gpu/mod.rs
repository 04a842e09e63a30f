//! THE facade: the one module through which the pipeline reaches a GPU (SPEC sections 1-6,
//! 10-12). Every entry point does a whole job on a device or declines, and then the CPU twin
//! (passed in by the caller) runs: never partial results. Placement is decided here only:
//! the backend, the gates (`scope`), `min_rows`, and the measured per-class probe.

pub mod backend;
#[cfg(any(test, feature = "gpu", feature = "cuda"))]
pub mod candidates;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod explain;
pub mod memory;
pub mod planar;
pub mod probe;
pub mod race;
pub mod scope;
pub mod selection;
#[cfg(any(feature = "gpu", feature = "cuda"))]
pub mod stage_skip;
pub mod transcode;
#[cfg(test)]
pub(crate) mod scripted;
#[cfg(feature = "gpu")]
pub mod wgpu;

use backend::{Backend, DeviceInfo, DeviceOutcome, FfnJob, GraphReadback, MatmulJob, MultiMatmulJob, PrefillGraphJob, TokenGraphJob};
use explain::{Explain, Reason};
use probe::{Arm, ClassProbe, OpClass, Remembered, Verdict, VerdictCache, PROBE_UPLOAD_CAP};
use race::{ContentionKill, GraphArm, GraphRace};
use scope::LayerFilter;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Rows from which a matrix pays for a dispatch + readback on unified memory: only
/// lm_head-class matrices do there.
pub const GPU_MIN_ROWS_UNIFIED: usize = 65_536;
/// The same on a discrete card: FFN/QKV matrices pay off (a 35B model on a 24 GB card saw
/// ~0 offload under the universal 65_536).
pub const GPU_MIN_ROWS_DISCRETE: usize = 4_096;

/// `CMF_GPU_WGPU_GRAPH` (every backend): whether the graphs may run -- none, the batched
/// prefill graph only, or both it and the whole-token decode graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphMode {
    Off,
    PrefillOnly,
    On,
}

impl GraphMode {
    pub fn parse(v: Option<&str>) -> GraphMode {
        match v {
            Some("0") => GraphMode::Off,
            Some("prefill") => GraphMode::PrefillOnly,
            _ => GraphMode::On,
        }
    }
}

/// Everything the environment configures, parsed once (tests build their own).
#[derive(Debug, Clone)]
pub struct GpuConfig {
    /// `CMF_GPU_MIN_ROWS`; `None` = the device-class default.
    pub min_rows: Option<usize>,
    /// `CMF_GPU_LAYERS`.
    pub layers: LayerFilter,
    /// `CMF_GPU_PROBE=0` turns probing off (the device is trusted).
    pub probe: bool,
    /// `CMF_PROBE_CACHE`.
    pub cache: VerdictCache,
    pub graph: GraphMode,
    /// `CMF_MM_KILL=0` disables the contention kill.
    pub kill: bool,
    /// The engine version that keys cached verdicts.
    pub version: String,
}

impl GpuConfig {
    /// Defaults with no cache file: what tests use (they never read the default cache).
    pub fn for_tests() -> GpuConfig {
        GpuConfig { min_rows: Some(0), layers: LayerFilter::All, probe: true, cache: VerdictCache { path: None }, graph: GraphMode::On, kill: true, version: env!("CARGO_PKG_VERSION").into() }
    }

    /// Read the `CMF_*` variables; every unparsable value keeps its default and adds a notice.
    pub fn from_env(cache_dir: &std::path::Path) -> (GpuConfig, Vec<String>) {
        let var = |k: &str| std::env::var(k).ok();
        let mut notes = Vec::new();
        let min_rows = var("CMF_GPU_MIN_ROWS").and_then(|v| match v.trim().parse::<usize>() {
            Ok(n) => Some(n),
            Err(_) => {
                notes.push(format!("CMF_GPU_MIN_ROWS={v:?} is not a number; using the device default"));
                None
            }
        });
        let layers = match var("CMF_GPU_LAYERS") {
            None => LayerFilter::All,
            Some(v) => LayerFilter::parse(&v).unwrap_or_else(|e| {
                notes.push(format!("CMF_GPU_LAYERS={v:?}: {e}; no layer restriction"));
                LayerFilter::All
            }),
        };
        let cfg = GpuConfig {
            min_rows,
            layers,
            probe: var("CMF_GPU_PROBE").as_deref() != Some("0"),
            cache: VerdictCache::from_env(var("CMF_PROBE_CACHE").as_deref(), cache_dir),
            graph: GraphMode::parse(var("CMF_GPU_WGPU_GRAPH").as_deref()),
            kill: var("CMF_MM_KILL").as_deref() != Some("0"),
            version: env!("CARGO_PKG_VERSION").into(),
        };
        (cfg, notes)
    }
}

/// The graph's outcome for one token (SPEC section 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphOutcome {
    /// Nothing committed: run the per-op path.
    Declined(&'static str),
    Completed,
    /// The device failed after admitting state: reset the sequence.
    Failed(String),
}

/// A graph call's device prefix, (its layers, the model's), when it runs fewer than all.
fn prefix(layers: usize, model: &crate::model::llama::Llama) -> Option<(usize, usize)> {
    let all = model.layers.len();
    (layers < all).then_some((layers, all))
}

/// Probe state of all classes.
#[derive(Default)]
struct ProbeState {
    classes: HashMap<OpClass, ClassProbe>,
    remembered: Remembered,
}

/// The facade: backend, gates, probe, race, counters. Shared by `Arc`.
pub struct Gpu {
    backend: Option<Box<dyn Backend>>,
    info: Option<DeviceInfo>,
    cfg: GpuConfig,
    probes: Mutex<ProbeState>,
    trust_wide: AtomicUsize,
    kill: Mutex<ContentionKill>,
    race: Mutex<GraphRace>,
    explain: Mutex<Explain>,
    cache_error_logged: AtomicBool,
}

static GLOBAL: OnceLock<Arc<Gpu>> = OnceLock::new();

/// The graph profile's level from `CMF_GRAPH_HOSTPROF`: 1 the host/GPU split per token and
/// prefill chunk, 2 also the GPU time per kind of dispatch (wgpu); 0 unset or anything else.
pub(crate) fn hostprof_level() -> u8 {
    match std::env::var("CMF_GRAPH_HOSTPROF").as_deref() {
        Ok("1") => 1,
        Ok("2") => 2,
        _ => 0,
    }
}

/// Log a facade notice (stderr, one line).
fn notice(msg: &str) {
    eprintln!("cortiq: {msg}");
}

/// Whether a graph's decline says the graphs cannot be built for this model at all (the
/// session does not ask again), rather than that this one call cannot run.
pub fn refuses_model(reason: &str) -> bool {
    reason.starts_with("cannot build")
}

/// A backend's decline reason `$why` as a job says it, or (`$graph` true) as a graph does:
/// after "cannot build a graph: ", which `refuses_model` recognizes.
#[cfg(any(feature = "gpu", feature = "cuda"))]
macro_rules! declined_why {
    ($graph:expr, $why:literal) => {
        if $graph { concat!("cannot build a graph: ", $why) } else { $why }
    };
}
#[cfg(any(feature = "gpu", feature = "cuda"))]
pub(crate) use declined_why;

impl Gpu {
    /// A facade over `backend` (None: CPU only) with explicit configuration.
    pub fn new(backend: Option<Box<dyn Backend>>, cfg: GpuConfig) -> Gpu {
        let info = backend.as_ref().map(|b| b.info());
        let remembered = match &info {
            Some(i) => cfg.cache.load(&cfg.version, &i.name),
            None => Remembered::new(),
        };
        let kill = ContentionKill::new(cfg.kill);
        Gpu {
            backend,
            info,
            cfg,
            probes: Mutex::new(ProbeState { classes: HashMap::new(), remembered }),
            trust_wide: AtomicUsize::new(0),
            kill: Mutex::new(kill),
            race: Mutex::new(GraphRace::default()),
            explain: Mutex::new(Explain::default()),
            cache_error_logged: AtomicBool::new(false),
        }
    }

    /// The process facade, configured from `CMF_GPU` and friends on first use (notices logged once).
    pub fn global() -> Arc<Gpu> {
        Arc::clone(GLOBAL.get_or_init(|| {
            let (req, mut notes) = selection::parse_request(std::env::var("CMF_GPU").ok().as_deref());
            let note = notes.take();
            let (cfg, env_notes) = GpuConfig::from_env(&crate::hub::cache_dir());
            let (name, missing) = selection::resolve(req, &selection::compiled_backends());
            for n in note.into_iter().chain(missing).chain(env_notes) {
                notice(&n);
            }
            Arc::new(Gpu::new(open_backend(name), cfg))
        }))
    }

    /// `cpu|wgpu|cuda|metal`: the backend that runs device jobs.
    pub fn backend_name(&self) -> &'static str {
        self.info.as_ref().map(|i| i.backend).unwrap_or("cpu")
    }

    /// The backend's graph profile (host/GPU split, tokens queued ahead), where it keeps one.
    pub fn backend_profile(&self) -> Option<backend::GraphProfile> {
        self.backend.as_ref().and_then(|b| b.graph_profile())
    }

    /// Whether this build brought a GPU up here (compiled backend + live adapter).
    pub fn backend_available(&self) -> bool {
        self.backend.is_some()
    }

    pub fn device_info(&self) -> Option<&DeviceInfo> {
        self.info.as_ref()
    }

    pub fn device_count(&self) -> usize {
        usize::from(self.backend.is_some())
    }

    /// True for a discrete card; false for unified memory or no GPU.
    pub fn discrete(&self) -> bool {
        self.info.as_ref().is_some_and(|i| i.discrete)
    }

    /// Rows below which a matrix stays on the CPU.
    pub fn min_rows(&self) -> usize {
        self.cfg.min_rows.unwrap_or(if self.discrete() { GPU_MIN_ROWS_DISCRETE } else { GPU_MIN_ROWS_UNIFIED })
    }

    /// Weight budget: 0 = no GPU, `u64::MAX` = unified memory.
    pub fn vram_budget(&self) -> u64 {
        self.backend.as_ref().map(|b| b.weight_budget()).unwrap_or(0)
    }

    pub fn resident_bytes(&self) -> u64 {
        self.backend.as_ref().map(|b| b.resident_bytes()).unwrap_or(0)
    }

    /// Bytes uploaded so far (a steady-state window must not grow it).
    pub fn upload_bytes(&self) -> u64 {
        self.backend.as_ref().map(|b| b.upload_bytes()).unwrap_or(0)
    }

    /// Measured host-to-device bandwidth in bytes/s (None without a device).
    pub fn upload_bandwidth_probe(&self) -> Option<f64> {
        self.backend.as_ref().and_then(|b| b.upload_bandwidth())
    }

    /// The backend's own status lines (empty without a backend).
    pub fn status_lines(&self) -> Vec<String> {
        self.backend.as_ref().map(|b| b.status_lines()).unwrap_or_default()
    }

    pub fn config(&self) -> &GpuConfig {
        &self.cfg
    }

    /// Backend up AND layer allowed AND not in a CPU scope AND not paused.
    pub fn enabled_here(&self) -> bool {
        self.gate_reason().is_none()
    }

    fn gate_reason(&self) -> Option<Reason> {
        if self.backend.is_none() {
            return Some(Reason::NoBackend);
        }
        let s = scope::current();
        if s.cpu_only() {
            Some(Reason::CpuScope)
        } else if scope::paused() {
            Some(Reason::Paused)
        } else if !self.cfg.layers.allows(s.layer) {
            Some(Reason::LayerNotAllowed)
        } else {
            None
        }
    }

    /// Trust the wide classes (no probing) while the guard lives: for long, uniform, warm
    /// loops such as diffusion steps.
    pub fn trust_wide(self: &Arc<Self>) -> TrustGuard {
        self.trust_wide.fetch_add(1, Ordering::SeqCst);
        TrustGuard(Arc::clone(self))
    }

    /// Remembered and decided verdicts, for `cortiq gpu`.
    pub fn verdicts(&self) -> Vec<(OpClass, Verdict)> {
        let p = self.probes.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<(OpClass, Verdict)> = p.remembered.iter().map(|(c, v)| (*c, *v)).collect();
        for (c, cp) in &p.classes {
            if let Some(verdict) = cp.verdict {
                v.retain(|(k, _)| k != c);
                v.push((*c, verdict));
            }
        }
        v.sort_by_key(|(c, _)| *c);
        v
    }

    /// The `--explain` table (with the graph's host/GPU split under `CMF_GRAPH_HOSTPROF=1`).
    pub fn explain_table(&self) -> String {
        let mut t = self.explain.lock().unwrap_or_else(|e| e.into_inner()).table(self.backend_name());
        let hostprof = hostprof_level() > 0;
        let Some(p) = self.backend.as_ref().and_then(|b| b.graph_profile()) else { return t };
        if hostprof {
            t.push_str(&p.prefill_line());
            if p.tokens > 0 {
                let per = |d: Duration| d.as_secs_f64() * 1e6 / p.tokens as f64;
                let pass = p.gpu_pass.map(|d| format!(", of which the compute pass on the GPU {:.1} us", per(d))).unwrap_or_default();
                t.push_str(&format!("\ntoken graph, per token over {} tokens: host encode {:.1} us (before the submission), GPU tail {:.1} us (submission to readback){pass}\n", p.tokens, per(p.host), per(p.tail)));
            }
        }
        if p.tokens_ahead + p.ahead_dropped > 0 {
            t.push_str(&format!("token graph: {} tokens were queued ahead on the device's own pick (argmax or draw) and taken, {} queued ahead and replaced by the host's\n", p.tokens_ahead, p.ahead_dropped));
        }
        t.push_str(&p.note_lines());
        if hostprof && p.tokens > 0 {
            t.push_str(&p.kernel_lines());
        }
        t
    }

    /// y = x . W^T, on the device or by `cpu`.
    pub fn matmul(&self, job: &MatmulJob, out: &mut [f32], cpu: impl FnOnce(&mut [f32])) {
        let class = OpClass::of_matmul(job.w.view.rows, job.w.view.cols, job.batch);
        self.route(class, job.w.view.rows, &[job.w.key], out, |b, o| b.matmul(job, o), cpu);
    }

    /// Several matrices of one input (QKV) in one submission, or by `cpu`.
    pub fn matmul_many(&self, job: &MultiMatmulJob, outs: &mut [&mut [f32]], cpu: impl FnOnce(&mut [&mut [f32]])) {
        let rows = job.ws.iter().map(|w| w.view.rows).max().unwrap_or(0);
        let class = if job.batch == 1 { OpClass::QkvBatch } else { OpClass::of_matmul(rows, job.ws[0].view.cols, job.batch) };
        let keys: Vec<u64> = job.ws.iter().map(|w| w.key).collect();
        self.route(class, rows, &keys, outs, |b, o| b.matmul_many(job, o), cpu);
    }

    /// A whole dense FFN in one submission, or by `cpu`.
    pub fn ffn(&self, job: &FfnJob, out: &mut [f32], cpu: impl FnOnce(&mut [f32])) {
        let keys = [job.gate.key, job.up.key, job.down.key];
        self.route(OpClass::Ffn, job.gate.view.rows, &keys, out, |b, o| b.ffn(job, o), cpu);
    }

    /// Whether the token graph may run this generation: a backend, graphs on, and either a
    /// trusted (discrete) device or the race's arm for this generation.
    pub fn graph_arm(&self) -> GraphArm {
        if self.gate_reason().is_some() || self.cfg.graph != GraphMode::On {
            return GraphArm::PerOp;
        }
        if self.discrete() {
            return GraphArm::Graph;
        }
        self.race.lock().unwrap_or_else(|e| e.into_inner()).arm_for_generation()
    }

    /// Feed a finished generation's token times to the race (untrusted devices only).
    pub fn record_generation(&self, arm: GraphArm, token_times: &[Duration]) {
        if !self.discrete() && self.backend.is_some() {
            self.race.lock().unwrap_or_else(|e| e.into_inner()).record_generation(arm, token_times);
        }
    }

    /// One decode token through the whole stack on the device; `out`: the logits, or only
    /// their argmax.
    pub fn token_graph(&self, job: &TokenGraphJob, out: GraphReadback) -> GraphOutcome {
        self.graph_call(0, prefix(job.layers, job.model), |b| b.token_graph(job, out))
    }

    /// How many leading layers of `model` the backend's token graph runs (`Backend::graph_layers`;
    /// 0 without a backend).
    pub fn graph_layers(&self, model: &crate::model::llama::Llama) -> usize {
        self.backend.as_ref().map_or(0, |b| b.graph_layers(model))
    }

    /// Whether prompts go through the batched prefill graph: a backend, graphs on (or on for
    /// prompts only), and a device the graph is trusted on (SPEC sections 8-9).
    pub fn prefill_graph_enabled(&self) -> bool {
        self.backend.is_some() && self.gate_reason().is_none() && self.cfg.graph != GraphMode::Off && self.discrete()
    }

    /// Prompt rows per chunk for `model`: the backend's prefill-graph capacity where prompts
    /// run as prefill graphs, else the session's default chunk.
    pub fn prefill_rows(&self, model: &crate::model::Llama) -> usize {
        match &self.backend {
            Some(b) if self.prefill_graph_enabled() => b.prefill_rows(model).max(1),
            _ => crate::pipeline::PREFILL_CHUNK,
        }
    }

    /// A prompt chunk through the backend's batched prefill graph; `out` is the last
    /// position's logits or their argmax.
    pub fn prefill_graph(&self, job: &PrefillGraphJob, out: GraphReadback) -> GraphOutcome {
        self.graph_call(job.tokens.len() as u64, prefix(job.layers, job.model), |b| b.prefill_graph(job, out))
    }

    /// A graph call (a decode token, or a prefill chunk of `prompt_rows` rows; `prefix`: a
    /// device prefix, its layers of the model's), counted for `--explain` when it completes.
    fn graph_call(&self, prompt_rows: u64, prefix: Option<(usize, usize)>, call: impl FnOnce(&dyn Backend) -> DeviceOutcome) -> GraphOutcome {
        let Some(b) = &self.backend else { return GraphOutcome::Declined("no GPU backend") };
        let t = Instant::now();
        match call(b.as_ref()) {
            DeviceOutcome::Completed { .. } => {
                let mut e = self.explain.lock().unwrap_or_else(|e| e.into_inner());
                if prompt_rows > 0 {
                    e.prefill_chunks += 1;
                    e.prefill_rows += prompt_rows;
                    e.prefill_time += t.elapsed();
                } else {
                    e.graph_tokens += 1;
                    e.graph_time += t.elapsed();
                }
                e.graph_prefix = prefix;
                GraphOutcome::Completed
            }
            DeviceOutcome::Declined(r) => {
                if refuses_model(r) {
                    let mut e = self.explain.lock().unwrap_or_else(|e| e.into_inner());
                    if e.graph_refused.replace(r) != Some(r) {
                        notice(&format!("{r}; {} runs this model op by op (`--explain` counts where each op ran)", self.backend_name()));
                    }
                }
                GraphOutcome::Declined(r)
            }
            DeviceOutcome::Failed(e) => GraphOutcome::Failed(e),
        }
    }

    /// Copy device mirror rows back into the host cache (switching to the per-op path).
    pub fn pull_kv(&self, seq: u64, from: usize, to: usize, host: &mut crate::kv::KvCache) -> Result<(), String> {
        match &self.backend {
            Some(b) => b.pull_kv(seq, from, to, host),
            None => Err("no GPU backend".into()),
        }
    }

    pub fn reset_sequence(&self, seq: u64) {
        if let Some(b) = &self.backend {
            b.reset_sequence(seq);
        }
    }

    /// The shared routing of every stateless entry point.
    fn route<O: ?Sized>(&self, class: OpClass, rows: usize, keys: &[u64], out: &mut O, gpu: impl FnOnce(&dyn Backend, &mut O) -> DeviceOutcome, cpu: impl FnOnce(&mut O)) {
        if let Some(r) = self.gate_reason() {
            return self.run_cpu(class, r, out, cpu);
        }
        if rows < self.min_rows() {
            return self.run_cpu(class, Reason::BelowMinRows, out, cpu);
        }
        if self.kill.lock().unwrap_or_else(|e| e.into_inner()).killed {
            return self.run_cpu(class, Reason::Contention, out, cpu);
        }
        let backend = self.backend.as_deref().expect("gate checked the backend");
        let trusted = !self.cfg.probe || (class.is_wide() && self.trust_wide.load(Ordering::SeqCst) > 0);
        let decision = {
            let mut p = self.probes.lock().unwrap_or_else(|e| e.into_inner());
            let remembered = p.remembered.get(&class).copied();
            let cp = p.classes.entry(class).or_default();
            match cp.verdict.or(remembered) {
                Some(v) => Decision::Settled(v),
                None if trusted => Decision::Settled(Verdict::Gpu),
                None => {
                    let resident = keys.iter().all(|&k| backend.is_resident(k));
                    if resident {
                        Decision::Probe(cp.next_arm(), true)
                    } else if cp.uploads < PROBE_UPLOAD_CAP {
                        // The upload is needed regardless; the sample is discarded as cold.
                        Decision::Probe(Arm::Gpu, false)
                    } else {
                        Decision::Probe(Arm::Cpu, false)
                    }
                }
            }
        };
        match decision {
            Decision::Settled(Verdict::Cpu) => self.run_cpu(class, Reason::VerdictCpu, out, cpu),
            Decision::Settled(Verdict::Gpu) => {
                let reason = if trusted { Reason::Trusted } else { Reason::VerdictGpu };
                let t = Instant::now();
                match gpu(backend, out) {
                    DeviceOutcome::Completed { .. } => {
                        let elapsed = t.elapsed();
                        self.stat(class, true, reason, elapsed);
                        self.after_wide(class, rows, elapsed);
                    }
                    DeviceOutcome::Declined(_) => self.run_cpu(class, Reason::Declined, out, cpu),
                    DeviceOutcome::Failed(e) => {
                        notice(&format!("{} failed on the device ({e}); ran on the CPU", class.name()));
                        self.run_cpu(class, Reason::FailedStateless, out, cpu)
                    }
                }
            }
            Decision::Probe(Arm::Gpu, resident) => {
                let t = Instant::now();
                let outcome = gpu(backend, out);
                let elapsed = t.elapsed();
                match outcome {
                    DeviceOutcome::Completed { cold } => {
                        self.stat(class, true, Reason::ProbeGpu, elapsed);
                        let uploaded = if resident { 0 } else { keys.len() };
                        self.probe_sample(class, |cp| {
                            cp.uploads += uploaded;
                            cp.record_gpu(elapsed, cold || !resident)
                        });
                    }
                    DeviceOutcome::Declined(_) => {
                        self.probe_sample(class, ClassProbe::record_decline);
                        self.run_cpu(class, Reason::Declined, out, cpu);
                    }
                    DeviceOutcome::Failed(e) => {
                        notice(&format!("{} failed on the device ({e}); ran on the CPU", class.name()));
                        self.probe_sample(class, ClassProbe::record_decline);
                        self.run_cpu(class, Reason::FailedStateless, out, cpu);
                    }
                }
            }
            Decision::Probe(Arm::Cpu, resident) => {
                // Timed inside a CPU-only scope, so inner hooks cannot re-enter the GPU.
                let t = Instant::now();
                scope::cpu_scope(|| cpu(out));
                let elapsed = t.elapsed();
                let reason = if resident { Reason::ProbeCpu } else { Reason::ProbeUploadCap };
                self.stat(class, false, reason, elapsed);
                if resident {
                    self.probe_sample(class, |cp| cp.record_cpu(elapsed));
                }
            }
        }
    }

    fn run_cpu<O: ?Sized>(&self, class: OpClass, reason: Reason, out: &mut O, cpu: impl FnOnce(&mut O)) {
        let t = Instant::now();
        cpu(out);
        self.stat(class, false, reason, t.elapsed());
    }

    fn stat(&self, class: OpClass, gpu: bool, reason: Reason, t: Duration) {
        self.explain.lock().unwrap_or_else(|e| e.into_inner()).record(class, gpu, reason, t);
    }

    /// Apply a sample to a class's probe; log and persist a verdict reached now.
    fn probe_sample(&self, class: OpClass, f: impl FnOnce(&mut ClassProbe)) {
        let mut p = self.probes.lock().unwrap_or_else(|e| e.into_inner());
        let cp = p.classes.entry(class).or_default();
        f(cp);
        if !std::mem::take(&mut cp.fresh) {
            return;
        }
        let verdict = cp.verdict.expect("fresh means decided");
        let ms = |d: Option<Duration>| d.map(|d| format!("{:.3} ms", d.as_secs_f64() * 1e3)).unwrap_or_else(|| "-".into());
        notice(&format!(
            "probe verdict {}: {} (gpu best {}, cpu best {}, {} declines)",
            class.name(),
            verdict.name(),
            ms(cp.best_gpu()),
            ms(cp.best_cpu()),
            cp.declines
        ));
        drop(p);
        if let Some(info) = &self.info {
            if let Err(e) = self.cfg.cache.store(&self.cfg.version, &info.name, class, verdict) {
                if !self.cache_error_logged.swap(true, Ordering::SeqCst) {
                    notice(&format!("cannot write the probe cache ({e}); verdicts will be probed again next run"));
                }
            }
        }
    }

    /// Contention kill bookkeeping for wide GEMMs.
    fn after_wide(&self, class: OpClass, rows: usize, t: Duration) {
        if class != OpClass::MatmatWide {
            return;
        }
        let mut k = self.kill.lock().unwrap_or_else(|e| e.into_inner());
        if k.record(rows as f64, t) {
            notice("wide GEMMs ran far over budget three times in a row: another process owns the device; CPU for the rest of this process");
        }
    }
}

/// What the probe says for one call.
enum Decision {
    Settled(Verdict),
    /// Undecided: the arm to take, and whether the weights were already resident.
    Probe(Arm, bool),
}

/// While alive, wide classes run on the device without probing.
pub struct TrustGuard(Arc<Gpu>);

impl Drop for TrustGuard {
    fn drop(&mut self) {
        self.0.trust_wide.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The backend named by selection, if this build has it and an adapter comes up.
fn open_backend(name: &str) -> Option<Box<dyn Backend>> {
    match name {
        "cpu" => None,
        #[cfg(feature = "cuda")]
        "cuda" => {
            let ordinal = std::env::var("CMF_GPU_ADAPTER").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
            match cuda::CudaBackend::new(ordinal) {
                Ok(b) => Some(Box::new(b)),
                Err(e) => {
                    notice(&format!("the CUDA backend (CMF_GPU) could not come up ({e}); running on the CPU"));
                    None
                }
            }
        }
        #[cfg(feature = "gpu")]
        "wgpu" => match self::wgpu::WgpuBackend::new() {
            Ok(b) => Some(Box::new(b)),
            Err(e) => {
                notice(&format!("the wgpu backend (CMF_GPU) could not come up ({e}); running on the CPU"));
                None
            }
        },
        other => {
            notice(&format!("backend {other} (CMF_GPU) could not be brought up; running on the CPU"));
            None
        }
    }
}

#[cfg(test)]
mod tests;
