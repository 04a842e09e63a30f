//! The `cortiq` command.

mod bench;
mod convert;
mod inspect;
#[cfg(feature = "gpu")]
mod kernels;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use cortiq_core::ModelFile;
use cortiq_engine::chat::Message;
use cortiq_engine::hub as pull;
use cortiq_engine::synth;
use cortiq_engine::generate::{Engine, GenerationStats, DEFAULT_CTX};
use cortiq_engine::perplexity::perplexity;
use cortiq_engine::pipeline::Session;
use cortiq_engine::sample::SamplerConfig;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "cortiq", version, about = "Quantized language models on CPU and GPU")]
struct Cli {
    /// Worker threads (default: all cores).
    #[arg(short = 't', long, global = true)]
    threads: Option<usize>,
    #[command(subcommand)]
    cmd: Command,
}

/// Sampling flags; their defaults are `SamplerConfig::default()`'s (llama.cpp's), which
/// `cortiq bench --sample` also decodes with.
#[derive(Args, Clone)]
struct SampleArgs {
    /// Temperature; 0 = greedy.
    #[arg(long, default_value_t = SamplerConfig::default().temperature)]
    temp: f32,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = SamplerConfig::default().top_k)]
    top_k: usize,
    #[arg(long, default_value_t = SamplerConfig::default().top_p)]
    top_p: f32,
    #[arg(long, default_value_t = SamplerConfig::default().min_p)]
    min_p: f32,
    #[arg(long, default_value_t = SamplerConfig::default().repeat_penalty)]
    repeat_penalty: f32,
}

impl SampleArgs {
    fn config(&self) -> SamplerConfig {
        SamplerConfig { temperature: self.temp, top_k: self.top_k, top_p: self.top_p, min_p: self.min_p, repeat_penalty: self.repeat_penalty, seed: self.seed, ..SamplerConfig::default() }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Generate text for one prompt; only the generated text goes to stdout.
    Run {
        /// Model path or known name (default: smollm2-135m-instruct, fetched on first use).
        #[arg(short, long)]
        model: Option<String>,
        /// Tokens to generate at most.
        #[arg(short = 'n', long, default_value_t = 256)]
        n_predict: usize,
        /// Feed the prompt as is (no chat template).
        #[arg(long)]
        raw: bool,
        /// Context length.
        #[arg(short = 'c', long, default_value_t = DEFAULT_CTX)]
        ctx: usize,
        /// Read the prompt from a file instead.
        #[arg(short = 'f', long)]
        file: Option<PathBuf>,
        /// After the run, print where each op class ran and why.
        #[arg(long)]
        explain: bool,
        #[command(flatten)]
        sample: SampleArgs,
        prompt: Option<String>,
    },
    /// Interactive chat with history; /exit quits, Ctrl-C stops a reply.
    Chat {
        #[arg(short, long)]
        model: Option<String>,
        #[arg(short = 'n', long, default_value_t = 512)]
        n_predict: usize,
        #[arg(short = 'c', long, default_value_t = DEFAULT_CTX)]
        ctx: usize,
        /// A system message to start the conversation with.
        #[arg(long)]
        system: Option<String>,
        #[command(flatten)]
        sample: SampleArgs,
    },
    /// Perplexity of a text file, llama.cpp's protocol; last line `PPL = <value>`.
    Perplexity {
        #[arg(short, long)]
        model: Option<String>,
        #[arg(short = 'f', long)]
        file: PathBuf,
        #[arg(short = 'c', long, default_value_t = 512)]
        ctx: usize,
    },
    /// Fetch a known model into the cache; prints its path last.
    Pull { name: Option<String> },
    /// Show what a model file holds.
    Inspect {
        model: String,
        /// List every metadata key.
        #[arg(long)]
        metadata: bool,
        /// Recompute CMF checksums.
        #[arg(long)]
        verify: bool,
    },
    /// Speed: prefill ppP and decode tgN, llama-bench style.
    Bench {
        #[arg(short, long)]
        model: Option<String>,
        #[arg(short = 'p', long, default_value_t = 512)]
        prompt: usize,
        #[arg(short = 'n', long, default_value_t = 128)]
        gen: usize,
        #[arg(short = 'r', long, default_value_t = 3)]
        reps: usize,
        #[arg(long, default_value = "auto")]
        backend: String,
        #[arg(long)]
        json: bool,
        /// Memory bandwidth (GB/s) for the floor fraction.
        #[arg(long)]
        bandwidth: Option<f64>,
        /// After the run, print where each op class ran and why.
        #[arg(long)]
        explain: bool,
        /// Decode with `cortiq run`'s default sampler (temperature 0.8, top-k 40, top-p 0.95,
        /// min-p 0.05: its 40 candidates come back every token, picked on the device where
        /// the backend can) instead of greedy; the row is `tgN sampled`.
        #[arg(long)]
        sample: bool,
        /// The sequence's context size (KV capacity), as `cortiq run -c`; default: the prompt
        /// plus the generated tokens plus one, as llama-bench. The decode row is then
        /// `tgN @ cCTX`.
        #[arg(short = 'c', long)]
        ctx: Option<usize>,
    },
    /// GPU facade status: compiled backends, the selected backend, adapters, budget, probe cache.
    Gpu {
        /// Time the wgpu matvec kernels on llama-1b/8b matrix shapes (GPU timestamps).
        #[arg(long)]
        kernels: bool,
        /// Memory bandwidth (GB/s) the kernel throughput is compared with.
        #[arg(long)]
        bandwidth: Option<f64>,
    },
    /// Write a random-weight llama GGUF of a named shape (tiny, tiny-wide, smollm2-135m, smollm2-360m, llama-1b, llama-8b), or a Gemma 3 one (gemma3-270m).
    Synth {
        shape: String,
        /// One codec for every matrix (q4_0, q4_1, q5_0, q8_0, q4_k, q5_k, q6_k, f16, ...), or
        /// q4_k_m / q5_k_m: llama.cpp's Q4_K_M / Q5_K_M mix (Q6_K for the head and for some
        /// layers' attn_v and ffn_down).
        #[arg(long, default_value = "q4_0")]
        codec: String,
        #[arg(short, long)]
        output: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Rewrite a model as CMF (or GGUF when OUT ends in .gguf).
    Convert {
        input: PathBuf,
        output: PathBuf,
        #[arg(long, default_value = "keep")]
        codec: String,
    },
}

fn main() {
    let cli = Cli::parse();
    let threads = cli.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
    cortiq_engine::cpu::pool::set_threads(threads);
    let _ = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global();
    // Bring the GPU facade up first, so its notices come before any output.
    let _ = cortiq_engine::gpu::Gpu::global();
    let result = run(cli.cmd);
    if let Err(e) = result {
        eprintln!("cortiq: error: {e:#}");
        std::process::exit(1);
    }
}

/// Write to stdout; a closed pipe (`cortiq inspect M | head`) ends the program quietly.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("cortiq: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

fn model_path(model: &Option<String>) -> Result<PathBuf> {
    pull::resolve(model.as_deref().unwrap_or(pull::DEFAULT_MODEL))
}

fn load_engine(model: &Option<String>) -> Result<Engine> {
    let path = model_path(model)?;
    Engine::load(&path).with_context(|| format!("loading {}", path.display()))
}

/// Read a text file, naming the file and the first bad byte when it is not UTF-8.
fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("{} is not valid UTF-8 (first bad byte at offset {})", path.display(), e.utf8_error().valid_up_to()))
}

fn cancel_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    flag
}

fn print_stats(s: &GenerationStats) {
    let n = s.generated.len();
    eprintln!(
        "\ncortiq: prompt {} tokens in {:.2} s ({:.1} tok/s), generated {} tokens in {:.2} s ({:.1} tok/s), stop: {:?}",
        s.prompt_tokens,
        s.prefill_s,
        s.prompt_tokens as f64 / s.prefill_s.max(1e-9),
        n,
        s.decode_s,
        n as f64 / s.decode_s.max(1e-9),
        s.stop
    );
}

fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Run { model, n_predict, raw, ctx, file, explain, sample, prompt } => {
            let text = match (file, prompt) {
                (Some(f), _) => read_text(&f)?,
                (None, Some(p)) => p,
                (None, None) => anyhow::bail!("no prompt: give one as an argument or with -f FILE"),
            };
            let engine = load_engine(&model)?;
            let prompt_text = if raw { text } else { engine.chat_prompt(&[Message::new("user", &text)])? };
            let tokens = engine.tokenize(&prompt_text)?;
            let mut session = Session::new(Arc::clone(&engine.model), ctx);
            let cancel = cancel_flag();
            let stats = engine.generate(&mut session, &tokens, n_predict, sample.config(), &cancel, emit)?;
            emit("\n");
            print_stats(&stats);
            if explain {
                eprintln!("\n{}", session.gpu.explain_table());
            }
            Ok(())
        }
        Command::Chat { model, n_predict, ctx, system, sample } => chat(&model, n_predict, ctx, system, &sample),
        Command::Perplexity { model, file, ctx } => {
            let text = read_text(&file)?;
            let engine = load_engine(&model)?;
            let t0 = std::time::Instant::now();
            let r = perplexity(&engine, &text, ctx, |i, n, ppl| eprintln!("chunk {i}/{n}: running PPL {ppl:.4}"))?;
            eprintln!("{} chunks, {} scored tokens, {:.1} s", r.chunks, r.scored_tokens, t0.elapsed().as_secs_f64());
            emit(&format!("PPL = {:.4} +/- {:.4}\n", r.ppl, r.ppl_stderr));
            Ok(())
        }
        Command::Pull { name } => {
            let path = pull::resolve(name.as_deref().unwrap_or(pull::DEFAULT_MODEL))?;
            emit(&format!("{}\n", path.display()));
            Ok(())
        }
        Command::Inspect { model, metadata, verify } => {
            let path = pull::resolve(&model)?;
            let m = ModelFile::open(&path).with_context(|| format!("reading {}", path.display()))?;
            if verify {
                m.verify_checksums()?;
                eprintln!("cortiq: checksums verified");
            }
            emit(&inspect::report(&m, metadata)?);
            if let Some(c) = inspect::dominant_codec(&m) {
                emit(&format!("\nmain codec: {c}\n"));
            }
            Ok(())
        }
        Command::Bench { model, prompt, gen, reps, backend, json, bandwidth, explain, sample, ctx } => {
            let path = model_path(&model)?;
            let engine = Engine::load(&path).with_context(|| format!("loading {}", path.display()))?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let args = bench::BenchArgs { prompt, gen, reps, backend, json, bandwidth_gbps: bandwidth, sample, ctx };
            emit(&format!("{}\n", bench::bench(&engine, &name, &args)?));
            if explain {
                eprintln!("\n{}", cortiq_engine::gpu::Gpu::global().explain_table());
                eprintln!("weight bytes per decode token by stage:");
                for (stage, bytes) in engine.model.weight_bytes_by_stage() {
                    eprintln!("  {stage}: {bytes} ({})", inspect::human(bytes));
                }
            }
            Ok(())
        }
        Command::Gpu { kernels, bandwidth } => {
            emit(&gpu_report());
            if kernels {
                #[cfg(feature = "gpu")]
                emit(&kernels::report(bandwidth)?);
                #[cfg(not(feature = "gpu"))]
                anyhow::bail!("--kernels times the wgpu kernels; this build has no wgpu backend (feature gpu)");
            }
            let _ = bandwidth;
            Ok(())
        }
        Command::Synth { shape, codec, output, seed } => synth::synth(&shape, &codec, &output, seed),
        Command::Convert { input, output, codec } => {
            let input = pull::resolve(&input.to_string_lossy())?;
            convert::convert(&input, &output, &codec)
        }
    }
}

/// `cortiq gpu`: what the facade sees on this machine.
fn gpu_report() -> String {
    use cortiq_engine::gpu::{selection, Gpu};
    let gpu = Gpu::global();
    let cfg = gpu.config();
    let mut s = String::new();
    s += &format!("cpu kernels: {}\n", cortiq_engine::cpu::dot::kernels_in_use());
    s += &format!("compiled backends: {}\n", selection::compiled_backends().join(", "));
    s += &format!("CMF_GPU: {}\n", std::env::var("CMF_GPU").unwrap_or_else(|_| "(unset: CPU only)".into()));
    s += &format!("backend: {}\n", gpu.backend_name());
    match gpu.device_info() {
        Some(d) => {
            let memory = if d.memory_bytes == u64::MAX { "unified memory".to_string() } else { format!("{} memory", inspect::human(d.memory_bytes)) };
            s += &format!("device: {} ({}, {memory}, f16 {}, subgroups {}, matrix units {})\n", d.name, if d.discrete { "discrete" } else { "integrated/unified" }, d.f16, d.subgroups, d.matrix_units)
        }
        None => s += "adapters: none (no GPU backend in this build or none came up)\n",
    }
    #[cfg(feature = "gpu")]
    {
        let list = cortiq_engine::gpu::wgpu::WgpuBackend::adapters();
        s += &format!("wgpu adapters (CMF_GPU_ADAPTER picks by index or name): {}\n", if list.is_empty() { "none".into() } else { list.join("; ") });
    }
    for line in gpu.status_lines() {
        s += &format!("{line}\n");
    }
    let budget = gpu.vram_budget();
    s += &format!("weight budget: {}\n", if budget == 0 { "0 (no GPU)".to_string() } else if budget == u64::MAX { "unified memory".to_string() } else { inspect::human(budget) });
    s += &format!("min_rows: {}\n", gpu.min_rows());
    if let Some(bw) = gpu.upload_bandwidth_probe() {
        s += &format!("upload bandwidth: {:.1} GB/s (64 MiB host-to-device)\n", bw / 1e9);
    }
    s += &format!("probe: {}\n", if cfg.probe { "on (measured per op class)" } else { "off (CMF_GPU_PROBE=0: device trusted)" });
    s += &format!("probe cache: {}\n", cfg.cache.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "off (CMF_PROBE_CACHE=0)".into()));
    let verdicts = gpu.verdicts();
    if verdicts.is_empty() {
        s += "remembered verdicts: none\n";
    }
    for (c, v) in verdicts {
        s += &format!("verdict {}: {}\n", c.name(), v.name());
    }
    s
}

fn chat(model: &Option<String>, n_predict: usize, ctx: usize, system: Option<String>, sample: &SampleArgs) -> Result<()> {
    let engine = load_engine(model)?;
    let mut session = Session::new(Arc::clone(&engine.model), ctx);
    let mut messages: Vec<Message> = system.iter().map(|s| Message::new("system", s)).collect();
    // Tokens currently in the session's cache, to reuse the common prefix each turn.
    let mut cached: Vec<u32> = Vec::new();
    let cancel = cancel_flag();
    let stdin = std::io::stdin();
    eprintln!("cortiq chat: type a message, /exit to quit, Ctrl-C stops a reply");
    loop {
        eprint!("> ");
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end_matches(['\n', '\r']);
        if line == "/exit" {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        cancel.store(false, Ordering::SeqCst);
        messages.push(Message::new("user", line));
        let tokens = engine.tokenize(&engine.chat_prompt(&messages)?)?;
        let common = cached.iter().zip(&tokens).take_while(|(a, b)| a == b).count().min(tokens.len() - 1);
        session.truncate(common);
        let common = session.len().min(common);
        let mut reply = String::new();
        let stdout = std::io::stdout();
        let stats = engine.generate(&mut session, &tokens[common..], n_predict, sample.config(), &cancel, |piece| {
            reply.push_str(piece);
            let mut out = stdout.lock();
            let _ = out.write_all(piece.as_bytes());
            let _ = out.flush();
        });
        emit("\n");
        match stats {
            Ok(s) => {
                cached = tokens[..common].to_vec();
                cached.extend_from_slice(&tokens[common..]);
                cached.extend_from_slice(&s.generated[..s.generated.len().saturating_sub(1)]);
                cached.truncate(session.len());
            }
            Err(e) => {
                eprintln!("cortiq: {e}");
                messages.pop();
                session.truncate(0);
                cached.clear();
                continue;
            }
        }
        messages.push(Message::new("assistant", &reply));
    }
}
