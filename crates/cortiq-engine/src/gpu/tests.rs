//! The facade end to end with the scripted backend: probe, gates, fallback and graph rules
//! through the real pipeline, outputs compared with the CPU-only path.

use super::backend::{MatmulJob, WeightArg};
use super::explain::Reason;
use super::probe::{OpClass, Verdict, VerdictCache, CACHE_FILE, DECLINE_LIMIT};
use super::scripted::Scripted;
use super::*;
use crate::cpu::matmul::WeightView;
use crate::generate::Engine;
use crate::pipeline::Session;
use crate::sample::SamplerConfig;
use cortiq_core::Codec;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

fn tiny_model(dir: &tempfile::TempDir) -> PathBuf {
    let p = dir.path().join("tiny.gguf");
    crate::synth::synth("tiny", "q8_0", &p, 11).unwrap();
    p
}

fn greedy() -> SamplerConfig {
    SamplerConfig { temperature: 0.0, ..Default::default() }
}

/// Greedy tokens of one generation on a facade.
fn generate_on(engine: &Engine, gpu: Arc<Gpu>, n: usize) -> Result<Vec<u32>, crate::EngineError> {
    let prompt = engine.tokenize("hello world 42").unwrap();
    let mut s = Session::with_gpu(Arc::clone(&engine.model), 128, gpu);
    engine.generate(&mut s, &prompt, n, greedy(), &AtomicBool::new(false), |_| {}).map(|st| st.generated)
}

fn facade(backend: Scripted) -> Arc<Gpu> {
    Arc::new(Gpu::new(Some(Box::new(backend)), GpuConfig::for_tests()))
}

fn stats(gpu: &Gpu, class: OpClass) -> explain::ClassStats {
    gpu.explain.lock().unwrap().classes.get(&class).cloned().unwrap_or_default()
}

#[test]
fn a_declining_backend_settles_on_the_cpu_with_identical_output() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let reference = generate_on(&engine, Arc::new(Gpu::new(None, GpuConfig::for_tests())), 24).unwrap();
    let gpu = facade(Scripted { decline_ops: true, ..Default::default() });
    let got = generate_on(&engine, Arc::clone(&gpu), 24).unwrap();
    assert_eq!(got, reference);
    for class in [OpClass::QkvBatch, OpClass::Ffn, OpClass::Matvec] {
        let p = gpu.probes.lock().unwrap();
        let cp = &p.classes[&class];
        assert_eq!(cp.verdict, Some(Verdict::Cpu), "{class:?} settles on the CPU");
        assert_eq!(cp.declines, DECLINE_LIMIT, "{class:?}: no device calls after the verdict");
    }
    assert!(stats(&gpu, OpClass::Ffn).reasons[&Reason::VerdictCpu] > 0);
    assert!(gpu.explain_table().contains("declined x16"), "{}", gpu.explain_table());
}

#[test]
fn a_working_backend_gives_identical_output_and_uploads_once() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let reference = generate_on(&engine, Arc::new(Gpu::new(None, GpuConfig::for_tests())), 24).unwrap();
    let gpu = facade(Scripted::default());
    assert_eq!(generate_on(&engine, Arc::clone(&gpu), 24).unwrap(), reference);
    let uploaded = gpu.upload_bytes();
    assert!(uploaded > 0);
    assert_eq!(generate_on(&engine, Arc::clone(&gpu), 24).unwrap(), reference);
    assert_eq!(gpu.upload_bytes(), uploaded, "steady state: no re-upload");
    assert!(stats(&gpu, OpClass::Ffn).gpu_runs > 0);
}

#[test]
fn the_token_graph_matches_the_cpu_path_and_a_device_failure_resets_the_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let reference = generate_on(&engine, Arc::new(Gpu::new(None, GpuConfig::for_tests())), 24).unwrap();
    let graph = facade(Scripted { discrete: true, graph: true, ..Default::default() });
    assert_eq!(generate_on(&engine, Arc::clone(&graph), 24).unwrap(), reference);

    let failing = Scripted { discrete: true, graph: true, fail_graph_call: Some(5), ..Default::default() };
    let gpu = facade(failing);
    let prompt = engine.tokenize("hello world 42").unwrap();
    let mut s = Session::with_gpu(Arc::clone(&engine.model), 128, Arc::clone(&gpu));
    let err = engine.generate(&mut s, &prompt, 24, greedy(), &AtomicBool::new(false), |_| {}).unwrap_err();
    assert!(matches!(err, crate::EngineError::DeviceFailed(_)), "{err}");
    assert_eq!(s.len(), 0, "the sequence was reset, not continued on stale host state");
    assert_eq!(s.kv.len(), 0);
    // The reset session works again from scratch.
    let again = engine.generate(&mut s, &prompt, 24, greedy(), &AtomicBool::new(false), |_| {}).unwrap();
    assert_eq!(again.generated, reference);
}

#[test]
fn a_graph_that_cannot_be_built_is_remembered_and_per_op_runs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let reference = generate_on(&engine, Arc::new(Gpu::new(None, GpuConfig::for_tests())), 12).unwrap();
    let backend = Scripted { discrete: true, graph: false, ..Default::default() };
    let gpu = facade(backend);
    assert_eq!(generate_on(&engine, Arc::clone(&gpu), 12).unwrap(), reference);
}

#[test]
fn prompts_are_cut_into_chunks_as_long_as_the_backends_prefill_graph_takes() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let prompt: Vec<u32> = (0..300u32).map(|i| i * 7 % 2048).collect();
    let want = Session::with_gpu(Arc::clone(&engine.model), 400, Arc::new(Gpu::new(None, GpuConfig::for_tests()))).prefill(&prompt).unwrap();
    // (the backend's rows per call, the chunks a 300-row prompt takes)
    for (rows, chunks) in [(Some(120), 3), (Some(1024), 1), (None, 2)] {
        let gpu = facade(Scripted { discrete: true, graph: true, prefill: true, prefill_rows: rows, ..Default::default() });
        assert_eq!(gpu.prefill_rows(&engine.model), rows.unwrap_or(crate::pipeline::PREFILL_CHUNK));
        let mut dev = Session::with_gpu(Arc::clone(&engine.model), 400, Arc::clone(&gpu));
        assert_eq!(dev.prefill(&prompt).unwrap(), want, "{rows:?} rows a call");
        let e = gpu.explain.lock().unwrap().clone();
        assert_eq!((e.prefill_chunks, e.prefill_rows), (chunks, 300), "{rows:?} rows a call");
    }
    // Where prompts do not run as prefill graphs (not trusted on an integrated device), the
    // session's own chunk.
    let gpu = facade(Scripted { discrete: false, graph: true, prefill: true, prefill_rows: Some(1024), ..Default::default() });
    assert_eq!(gpu.prefill_rows(&engine.model), crate::pipeline::PREFILL_CHUNK);
}

#[test]
fn the_prefill_graph_takes_a_long_prompt_in_chunks_and_decode_continues_from_its_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let gpu = facade(Scripted { discrete: true, graph: true, prefill: true, ..Default::default() });
    // Two chunks: 256 rows, then 44.
    let prompt: Vec<u32> = (0..300u32).map(|i| i * 7 % 2048).collect();
    let mut cpu = Session::with_gpu(Arc::clone(&engine.model), 400, Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let mut dev = Session::with_gpu(Arc::clone(&engine.model), 400, Arc::clone(&gpu));
    let mut a = cpu.prefill(&prompt).unwrap();
    assert_eq!(dev.prefill(&prompt).unwrap(), a);
    assert_eq!((dev.len(), dev.kv.len()), (300, 0), "the prompt lives in the device mirror only");
    let e = gpu.explain.lock().unwrap().clone();
    assert_eq!((e.prefill_chunks, e.prefill_rows), (2, 300));
    assert!(gpu.explain_table().contains("| prefill graph | 2 | 2 | 0 | 300 prompt rows"), "{}", gpu.explain_table());
    assert!(stats(&gpu, OpClass::Matmat).calls == 0, "no chunk ran per op");
    // Decode continues from the mirror the prefill graph left.
    assert_eq!(dev.begin_generation(), GraphArm::Graph);
    for _ in 0..4 {
        let t = crate::sample::argmax(&a);
        a = cpu.step(t).unwrap();
        assert_eq!(dev.step(t).unwrap(), a);
    }
    // The host path pulls every row (prompt and decode) back before it runs.
    assert_eq!(cpu.forward(&[5, 6]).unwrap(), dev.forward(&[5, 6]).unwrap());
    assert_eq!(dev.kv.len(), 306);
}

/// The default sampler (top-k 40, a temperature) draws from the candidates a decode step
/// hands back (`Session::step_top_k`): through a whole-token graph (the scripted backend reads
/// the logits back and `GraphReadback::fill` picks them), through a device prefix, and on
/// the CPU, the same seeded generation; each step's candidates are the CPU logits' top 40.
#[test]
fn sampled_generation_draws_from_the_top_k_candidates_as_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let n = engine.model.cfg.n_layer;
    let prompt = engine.tokenize("hello world 42").unwrap();
    let sampled = |gpu: Arc<Gpu>| {
        let mut s = Session::with_gpu(Arc::clone(&engine.model), 128, gpu);
        engine.generate(&mut s, &prompt, 24, SamplerConfig::default(), &AtomicBool::new(false), |_| {}).unwrap().generated
    };
    let reference = sampled(Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let whole = facade(Scripted { discrete: true, graph: true, ..Default::default() });
    assert_eq!(sampled(Arc::clone(&whole)), reference);
    assert!(whole.explain.lock().unwrap().graph_tokens > 0, "the decode steps ran as token graphs");
    assert_eq!(sampled(facade(Scripted { discrete: true, graph: true, prefix_layers: Some(n - 1), ..Default::default() })), reference);
    let mut cpu = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let mut dev = Session::with_gpu(Arc::clone(&engine.model), 64, facade(Scripted { discrete: true, graph: true, ..Default::default() }));
    let mut a = cpu.prefill(&prompt).unwrap();
    dev.prefill(&prompt).unwrap();
    assert_eq!(dev.begin_generation(), GraphArm::Graph);
    for _ in 0..4 {
        let t = crate::sample::argmax(&a);
        a = cpu.step(t).unwrap();
        assert_eq!(dev.step_top_k(t, 40, None).unwrap(), crate::sample::top_candidates(&a, 40));
    }
}

#[test]
fn a_device_prefix_runs_the_leading_layers_on_the_device_and_the_rest_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let n = engine.model.cfg.n_layer;
    assert!(n >= 2, "the tiny model has layers on both sides of the split");
    let reference = generate_on(&engine, Arc::new(Gpu::new(None, GpuConfig::for_tests())), 24).unwrap();
    let prefix = || facade(Scripted { discrete: true, graph: true, prefix_layers: Some(n - 1), ..Default::default() });
    // Greedy generation through the prefix (argmax on the host after the host's layers).
    let gpu = prefix();
    assert_eq!(generate_on(&engine, Arc::clone(&gpu), 24).unwrap(), reference);
    assert!(gpu.explain_table().contains(&format!("layers 0..{} of {n} in one submission", n - 1)), "{}", gpu.explain_table());
    // Step by step with logits, then the per-op path takes the sequence over.
    let gpu = prefix();
    let prompt = engine.tokenize("hello world 42").unwrap();
    let mut cpu = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let mut dev = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::clone(&gpu));
    let mut a = cpu.prefill(&prompt).unwrap();
    assert_eq!(dev.prefill(&prompt).unwrap(), a);
    assert_eq!(dev.begin_generation(), GraphArm::Graph);
    for _ in 0..6 {
        let t = crate::sample::argmax(&a);
        a = cpu.step(t).unwrap();
        assert_eq!(dev.step(t).unwrap(), a, "the device prefix and the host's layers give the CPU path's logits");
    }
    assert!(dev.kv.len() < dev.len(), "the prefix's rows stay in the mirror until pulled");
    assert_eq!(cpu.forward(&[5, 6]).unwrap(), dev.forward(&[5, 6]).unwrap());
    assert_eq!(dev.kv.len(), dev.len(), "every layer's rows on the host after the pull");
    // Prompts through the prefill graph's prefix: two chunks (256 rows, then 44), each row's
    // residual after the prefix back to the host for the rest; decode continues.
    let gpu = facade(Scripted { discrete: true, graph: true, prefill: true, prefix_layers: Some(n - 1), ..Default::default() });
    let long: Vec<u32> = (0..300u32).map(|i| i * 7 % 2048).collect();
    let mut cpu = Session::with_gpu(Arc::clone(&engine.model), 400, Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let mut dev = Session::with_gpu(Arc::clone(&engine.model), 400, Arc::clone(&gpu));
    let mut a = cpu.prefill(&long).unwrap();
    assert_eq!(dev.prefill(&long).unwrap(), a, "the last position's logits through the prefix");
    assert_eq!(gpu.explain.lock().unwrap().prefill_chunks, 2, "both chunks ran as prefill graphs");
    assert_eq!((dev.len(), dev.kv.len()), (300, 0), "the prefix's rows live in the mirror only");
    assert_eq!(dev.begin_generation(), GraphArm::Graph);
    for _ in 0..3 {
        let t = crate::sample::argmax(&a);
        a = cpu.step(t).unwrap();
        assert_eq!(dev.step(t).unwrap(), a);
    }
    assert_eq!(cpu.forward(&[5]).unwrap(), dev.forward(&[5]).unwrap());
}

#[test]
fn a_failing_prefill_graph_resets_the_sequence_and_a_declined_one_runs_per_op() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let prompt = engine.tokenize("hello world 42, and then some more words").unwrap();
    let mut cpu = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let want = cpu.prefill(&prompt).unwrap();
    let failing = facade(Scripted { discrete: true, graph: true, prefill: true, fail_graph_call: Some(1), ..Default::default() });
    let mut s = Session::with_gpu(Arc::clone(&engine.model), 64, failing);
    assert!(matches!(s.prefill(&prompt), Err(crate::EngineError::DeviceFailed(_))));
    assert_eq!((s.len(), s.kv.len()), (0, 0), "a failed chunk leaves an empty sequence");
    assert_eq!(s.prefill(&prompt).unwrap(), want, "the next prefill starts clean");
    let declining = facade(Scripted { discrete: true, graph: true, prefill: false, ..Default::default() });
    let mut s = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::clone(&declining));
    assert_eq!(s.prefill(&prompt).unwrap(), want);
    assert_eq!((s.len(), s.kv.len()), (prompt.len(), prompt.len()), "a declined chunk ran per op, on the host cache");
    assert_eq!(declining.explain.lock().unwrap().prefill_chunks, 0);
    // Prompts do not go through the graph where graphs are off or the device is untrusted.
    let off = Arc::new(Gpu::new(Some(Box::new(Scripted { discrete: true, graph: true, prefill: true, ..Default::default() })), GpuConfig { graph: GraphMode::Off, ..GpuConfig::for_tests() }));
    assert!(!off.prefill_graph_enabled());
    assert!(!facade(Scripted { discrete: false, graph: true, prefill: true, ..Default::default() }).prefill_graph_enabled());
}

#[test]
fn a_dropped_session_frees_its_device_mirror() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let scripted = Scripted { discrete: true, graph: true, prefill: true, ..Default::default() };
    let mirrors = Arc::clone(&scripted.mirrors);
    let gpu = facade(scripted);
    let prompt = engine.tokenize("hello world 42").unwrap();
    let mut a = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::clone(&gpu));
    let mut b = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::clone(&gpu));
    assert_eq!(a.prefill(&prompt).unwrap(), b.prefill(&prompt).unwrap());
    assert_eq!(mirrors.lock().unwrap().len(), 2, "each prompt ran as a prefill graph on its own mirror");
    drop(a);
    assert_eq!(mirrors.lock().unwrap().len(), 1, "the dropped session's mirror is gone, the live one stays");
    b.begin_generation();
    b.step(3).unwrap();
    assert_eq!(mirrors.lock().unwrap().len(), 1);
}

#[test]
fn pulling_the_mirror_back_lets_the_per_op_path_continue_mid_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let gpu = facade(Scripted { discrete: true, graph: true, ..Default::default() });
    let prompt = engine.tokenize("hello world 42").unwrap();
    let mut cpu = Session::with_gpu(Arc::clone(&engine.model), 64, Arc::new(Gpu::new(None, GpuConfig::for_tests())));
    let mut dev = Session::with_gpu(Arc::clone(&engine.model), 64, gpu);
    let mut a = cpu.prefill(&prompt).unwrap();
    assert_eq!(dev.prefill(&prompt).unwrap(), a);
    dev.begin_generation();
    for _ in 0..5 {
        let t = crate::sample::argmax(&a);
        a = cpu.step(t).unwrap();
        assert_eq!(dev.step(t).unwrap(), a);
    }
    assert!(dev.kv.len() < dev.len(), "the device mirror leads the host cache");
    // A prompt-style forward on the host pulls the mirror rows back first.
    let ha = cpu.forward(&[5, 6]).unwrap();
    let hb = dev.forward(&[5, 6]).unwrap();
    assert_eq!(ha, hb);
    // Rolling back into rows only the mirror held keeps them: pull first, then reset.
    dev.begin_generation();
    for t in [9, 10, 11] {
        cpu.step(t).unwrap();
        dev.step(t).unwrap();
    }
    let keep = dev.len() - 1;
    assert!(dev.kv.len() < keep, "two rows live only in the mirror");
    cpu.truncate(keep);
    dev.truncate(keep);
    assert_eq!(dev.len(), keep);
    assert_eq!(cpu.forward(&[7]).unwrap(), dev.forward(&[7]).unwrap());
}

fn weight(bytes: &[u8], rows: usize, cols: usize) -> WeightArg<'_> {
    WeightArg { key: bytes.as_ptr() as u64, view: WeightView { codec: Codec::F32, rows, cols, bytes } }
}

/// Real timings through the facade: a slow device loses, a fast one wins, the verdict is
/// written to the cache and a new facade reads it back without probing.
#[test]
fn the_probe_measures_both_arms_and_persists_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join(CACHE_FILE);
    let cfg = GpuConfig { cache: VerdictCache { path: Some(cache.clone()) }, ..GpuConfig::for_tests() };
    let bytes = vec![0u8; 8 * 4 * 4];
    let x = vec![1f32; 8];
    let job = MatmulJob { w: weight(&bytes, 4, 8), x: &x, batch: 1 };
    let slow = Gpu::new(Some(Box::new(Scripted { delay: Duration::from_millis(20), ..Default::default() })), cfg.clone());
    for _ in 0..12 {
        let mut out = vec![0f32; 4];
        slow.matmul(&job, &mut out, |o| o.fill(0.0));
    }
    assert_eq!(slow.verdicts(), vec![(OpClass::Matvec, Verdict::Cpu)]);

    let fast_cfg = GpuConfig { cache: VerdictCache { path: Some(dir.path().join("other.tsv")) }, ..GpuConfig::for_tests() };
    let fast = Gpu::new(Some(Box::new(Scripted::default())), fast_cfg);
    for _ in 0..12 {
        let mut out = vec![0f32; 4];
        fast.matmul(&job, &mut out, |o| {
            std::thread::sleep(Duration::from_millis(10));
            o.fill(0.0)
        });
    }
    assert_eq!(fast.verdicts(), vec![(OpClass::Matvec, Verdict::Gpu)]);

    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(text.contains("\tScripted GPU\tmatvec\tcpu"), "{text}");
    let backend = Scripted { delay: Duration::from_millis(20), ..Default::default() };
    let reloaded = Gpu::new(Some(Box::new(backend)), cfg);
    let mut out = vec![0f32; 4];
    reloaded.matmul(&job, &mut out, |o| o.fill(0.0));
    assert_eq!(stats(&reloaded, OpClass::Matvec).reasons.get(&Reason::VerdictCpu), Some(&1), "no re-probe");
}

#[test]
fn gates_keep_work_on_the_cpu_and_say_why() {
    let bytes = vec![0u8; 8 * 4 * 4];
    let x = vec![1f32; 8];
    let job = MatmulJob { w: weight(&bytes, 4, 8), x: &x, batch: 1 };
    let run = |gpu: &Gpu| {
        let mut out = vec![0f32; 4];
        gpu.matmul(&job, &mut out, |o| o.fill(1.0));
    };
    let only_cpu = Gpu::new(None, GpuConfig::for_tests());
    run(&only_cpu);
    assert_eq!(stats(&only_cpu, OpClass::Matvec).reasons.get(&Reason::NoBackend), Some(&1));
    assert!(!only_cpu.enabled_here());
    assert_eq!(only_cpu.backend_name(), "cpu");

    let gpu = Gpu::new(Some(Box::new(Scripted::default())), GpuConfig { layers: LayerFilter::parse("0-1").unwrap(), ..GpuConfig::for_tests() });
    scope::cpu_scope(|| run(&gpu));
    {
        let _l = scope::in_layer(Some(5));
        run(&gpu);
    }
    {
        let _p = scope::pause_gpu();
        run(&gpu);
    }
    let big = Gpu::new(Some(Box::new(Scripted::default())), GpuConfig { min_rows: Some(100), ..GpuConfig::for_tests() });
    run(&big);
    let s = stats(&gpu, OpClass::Matvec);
    assert_eq!(s.reasons.get(&Reason::CpuScope), Some(&1));
    assert_eq!(s.reasons.get(&Reason::LayerNotAllowed), Some(&1));
    assert_eq!(s.reasons.get(&Reason::Paused), Some(&1));
    assert_eq!(stats(&big, OpClass::Matvec).reasons.get(&Reason::BelowMinRows), Some(&1));
    assert_eq!(s.gpu_runs, 0);
    // gpu_scope re-opens the gate inside a CPU scope.
    scope::cpu_scope(|| scope::gpu_scope(|| run(&gpu)));
    assert_eq!(stats(&gpu, OpClass::Matvec).gpu_runs, 1);
}

#[test]
fn probe_uploads_are_capped_at_four_tensors_per_class() {
    let gpu = Gpu::new(Some(Box::new(Scripted::default())), GpuConfig::for_tests());
    let bufs: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 8 * 4 * 4]).collect();
    let x = vec![1f32; 8];
    for b in &bufs {
        let job = MatmulJob { w: weight(b, 4, 8), x: &x, batch: 1 };
        let mut out = vec![0f32; 4];
        gpu.matmul(&job, &mut out, |o| o.fill(0.0));
    }
    let s = stats(&gpu, OpClass::Matvec);
    assert_eq!(s.gpu_runs, 4, "four cold uploads took the GPU arm");
    assert_eq!(s.reasons.get(&Reason::ProbeUploadCap), Some(&4));
}

#[test]
fn min_rows_defaults_follow_the_device_class_and_env_overrides() {
    let unified = Gpu::new(Some(Box::new(Scripted::default())), GpuConfig { min_rows: None, ..GpuConfig::for_tests() });
    assert_eq!(unified.min_rows(), GPU_MIN_ROWS_UNIFIED);
    let discrete = Gpu::new(Some(Box::new(Scripted { discrete: true, ..Default::default() })), GpuConfig { min_rows: None, ..GpuConfig::for_tests() });
    assert_eq!(discrete.min_rows(), GPU_MIN_ROWS_DISCRETE);
    assert!(discrete.discrete());
    let (cfg, notes) = {
        std::env::set_var("CMF_GPU_MIN_ROWS", "lots");
        std::env::set_var("CMF_GPU_LAYERS", "3-1");
        let r = GpuConfig::from_env(std::path::Path::new("/tmp"));
        std::env::remove_var("CMF_GPU_MIN_ROWS");
        std::env::remove_var("CMF_GPU_LAYERS");
        r
    };
    assert_eq!(cfg.min_rows, None);
    assert_eq!(cfg.layers, LayerFilter::All);
    assert_eq!(notes.len(), 2, "{notes:?}");
}

#[test]
fn trust_guard_skips_probing_for_wide_classes_only() {
    let gpu = Arc::new(Gpu::new(Some(Box::new(Scripted::default())), GpuConfig::for_tests()));
    let bytes = vec![0u8; 8 * 4 * 4];
    let x = vec![1f32; 8 * 128];
    let job = MatmulJob { w: weight(&bytes, 4, 8), x: &x, batch: 128 };
    {
        let _t = gpu.trust_wide();
        let mut out = vec![0f32; 4 * 128];
        gpu.matmul(&job, &mut out, |o| o.fill(0.0));
    }
    assert_eq!(stats(&gpu, OpClass::MatmatWide).reasons.get(&Reason::Trusted), Some(&1));
}

#[test]
fn the_graph_profile_reports_time_and_weight_read_rate_per_kind() {
    use super::backend::GraphProfile;
    use std::time::Duration;
    let mut p = GraphProfile { tokens: 4, ..Default::default() };
    assert_eq!(p.kernel_lines(), "", "no dispatch timestamps: no lines");
    p.kernels.insert("qkv (norm fused)", Duration::from_micros(400));
    p.kernels.insert("attention split", Duration::from_micros(80));
    p.stage_bytes.insert("qkv (norm fused)", 50_000_000);
    // 100 us per token for 50 MB per token: 500 GB/s; attention streams no weights.
    assert_eq!(p.kernel_lines(), "  GPU time per token, attention split: 20.0 us\n  GPU time per token, qkv (norm fused): 100.0 us, weights 50.0 MB (500 GB/s)\n");
    assert_eq!(p.prefill_line(), "", "no prefill chunks: no line");
    p.prefill_chunks = 2;
    p.prefill_rows = 512;
    (p.prefill_setup, p.prefill_host, p.prefill_tail) = (Duration::from_micros(600), Duration::from_millis(3), Duration::from_millis(50));
    assert_eq!(p.prefill_line(), "prefill graph, per chunk over 2 chunks (512 rows): device state 0.30 ms, launches queued 1.50 ms, then GPU tail 25.00 ms (to the readback)\n");
    p.prefill_kernels.insert("gate, up", Duration::from_millis(30));
    assert!(p.prefill_line().ends_with("(to the readback)\n  GPU time per prefill chunk, gate, up: 15.00 ms\n"), "{}", p.prefill_line());
    assert_eq!(p.note_lines(), "", "no fallbacks: no lines");
    p.graph_notes.push("QKV not folded into the attention split: a matrix split into row chunks".into());
    assert_eq!(p.note_lines(), "token graph: QKV not folded into the attention split: a matrix split into row chunks\n");
    (p.captures_invalidated, p.tokens_uncaptured) = (4, 1);
    assert!(p.note_lines().ends_with("chunks\ntoken graph: 4 captures invalidated by other work on the device and tried again; 1 tokens ran uncaptured\n"), "{}", p.note_lines());
}

/// A model the backend's graphs cannot take runs op by op, and `--explain` says why.
#[test]
fn a_model_the_graphs_refuse_runs_per_op_and_explain_names_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::load(&tiny_model(&dir)).unwrap();
    let reference = generate_on(&engine, Arc::new(Gpu::new(None, GpuConfig::for_tests())), 8).unwrap();
    let gpu = facade(Scripted { discrete: true, graph: false, prefill: false, ..Default::default() });
    assert_eq!(generate_on(&engine, Arc::clone(&gpu), 8).unwrap(), reference);
    let e = gpu.explain.lock().unwrap().clone();
    assert_eq!((e.graph_tokens, e.graph_refused), (0, Some("cannot build a graph for this model (scripted)")));
    let table = gpu.explain_table();
    assert!(table.contains("| graphs | - | - | - | not used: cannot build a graph for this model (scripted)"), "{table}");
    // A graph that runs leaves no such row.
    let whole = facade(Scripted { discrete: true, graph: true, ..Default::default() });
    generate_on(&engine, Arc::clone(&whole), 8).unwrap();
    assert!(!whole.explain_table().contains("not used"), "{}", whole.explain_table());
}
