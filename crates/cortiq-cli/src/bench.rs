//! `cortiq bench`: llama-bench-like speed numbers. Prefill `ppP` = tokens/s over a P-token
//! prompt from an empty cache; decode `tgN` = tokens/s over N single-token steps after that
//! prompt, batch 1, after one untimed warm-up run (the same prompt, then up to 8 decode
//! steps: as in llama-bench, one-off costs such as a GPU library loading the kernels for the
//! prompt's shapes stay out of the timings); greedy unless `--sample` (then every token is
//! drawn by the CLI's default sampler from its top-k candidates, picked on the device where
//! the backend can, as `cortiq run` does at its defaults). Token ids are drawn from the vocabulary with a fixed seed (speed does not
//! depend on the text).

use crate::inspect::human;
use anyhow::Result;
use cortiq_core::rng::SplitMix64;
use cortiq_engine::generate::{decode_step, Engine, Step};
use cortiq_engine::pipeline::Session;
use cortiq_engine::sample::{Sampler, SamplerConfig};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

pub struct BenchArgs {
    pub prompt: usize,
    pub gen: usize,
    pub reps: usize,
    pub backend: String,
    pub json: bool,
    /// Memory bandwidth in GB/s for `floor_fraction`, when known.
    pub bandwidth_gbps: Option<f64>,
    /// Decode with the default sampler (its top-k candidates back every token) instead of greedy.
    pub sample: bool,
    /// The sequence's context size (KV capacity); `None`: prompt + gen + 1, as llama-bench.
    pub ctx: Option<usize>,
}

struct Row {
    test: String,
    mean: f64,
    sd: f64,
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = if xs.len() > 1 { xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64 } else { 0.0 };
    (m, var.sqrt())
}

/// One timed run in a sequence of `ctx` positions: (prefill tok/s, decode tok/s).
fn run_once(engine: &Engine, prompt: &[u32], gen: usize, sample: bool, ctx: usize) -> Result<(f64, f64)> {
    let mut s = Session::new(Arc::clone(&engine.model), ctx);
    let t0 = Instant::now();
    let logits = s.prefill(prompt)?;
    let pp = prompt.len() as f64 / t0.elapsed().as_secs_f64();
    s.begin_generation();
    let t1 = Instant::now();
    // Each step as `cortiq run` takes it (`decode_step`): at the sampler's defaults its top-k
    // candidates back (picked on the device where the backend can, which may also draw the
    // next token ahead) and the draw on the host; greedy (temperature 0), only the device's
    // pick of the token.
    let mut sampler = Sampler::new(if sample { SamplerConfig::default() } else { SamplerConfig { temperature: 0.0, ..SamplerConfig::default() } });
    let mut last = Step::Logits(logits);
    for _ in 0..gen {
        let next = last.next_token(&mut sampler, prompt);
        last = decode_step(&mut s, &sampler, next)?;
    }
    let tg = gen as f64 / t1.elapsed().as_secs_f64();
    Ok((pp, tg))
}

pub fn bench(engine: &Engine, model_name: &str, a: &BenchArgs) -> Result<String> {
    let gpu = cortiq_engine::gpu::Gpu::global();
    let compiled = cortiq_engine::gpu::selection::compiled_backends();
    if a.backend != "auto" && !compiled.contains(&a.backend.as_str()) {
        anyhow::bail!("backend '{}' is not compiled into this build (available: {})", a.backend, compiled.join(", "));
    }
    if a.backend != "auto" && a.backend != gpu.backend_name() {
        anyhow::bail!("backend '{}' was asked for but '{}' is running (select it with CMF_GPU)", a.backend, gpu.backend_name());
    }
    let backend = gpu.backend_name();
    let needed = a.prompt.max(1) + a.gen + 1;
    let ctx = a.ctx.unwrap_or(needed);
    if ctx < needed {
        anyhow::bail!("--ctx {ctx} is smaller than the prompt plus the generated tokens plus one ({needed})");
    }
    if ctx > engine.model.cfg.n_ctx_train {
        anyhow::bail!("a context of {ctx} positions (--ctx, or the prompt plus the generated tokens plus one) is past the model's training context ({})", engine.model.cfg.n_ctx_train);
    }
    let at_ctx = a.ctx.map(|c| format!(" @ c{c}")).unwrap_or_default();
    let tg_name = if a.sample { format!("tg{} sampled{at_ctx}", a.gen) } else { format!("tg{}{at_ctx}", a.gen) };
    let mut rng = SplitMix64::new(1234);
    let vocab = engine.model.cfg.vocab as u64;
    let prompt: Vec<u32> = (0..a.prompt.max(1)).map(|_| (rng.next_u64() % vocab) as u32).collect();
    run_once(engine, &prompt, a.gen.min(8), a.sample, ctx)?;
    let (mut pps, mut tgs) = (Vec::new(), Vec::new());
    let uploads_before = gpu.upload_bytes();
    for r in 0..a.reps.max(1) {
        let (pp, tg) = run_once(engine, &prompt, a.gen, a.sample, ctx)?;
        eprintln!("run {}/{}: pp{} {:.1} tok/s, {} {:.1} tok/s", r + 1, a.reps, a.prompt, pp, tg_name, tg);
        pps.push(pp);
        tgs.push(tg);
    }
    let upload_delta = gpu.upload_bytes() - uploads_before;
    let (ppm, pps_sd) = mean_sd(&pps);
    let (tgm, tg_sd) = mean_sd(&tgs);
    let rows = [Row { test: format!("pp{}", a.prompt), mean: ppm, sd: pps_sd }, Row { test: tg_name, mean: tgm, sd: tg_sd }];
    let wbytes = engine.model.weight_bytes_per_token();
    let size = engine.model.file.file_size();
    let params = engine.model.n_params();
    let threads = cortiq_engine::cpu::pool::pool().threads();
    if a.json {
        let results: Vec<_> = rows
            .iter()
            .map(|r| {
                let floor = a.bandwidth_gbps.filter(|_| r.test.starts_with("tg")).map(|bw| r.mean / (bw * 1e9 / wbytes as f64));
                json!({
                    "test": r.test, "backend": backend, "threads": threads, "tokens_per_s": r.mean, "stddev": r.sd,
                    "weight_bytes_per_token": wbytes, "upload_bytes_delta": upload_delta, "floor_fraction": floor, "ctx": ctx,
                })
            })
            .collect();
        return Ok(serde_json::to_string_pretty(&json!({ "model": model_name, "size_bytes": size, "params": params, "results": results }))?);
    }
    let mut out = String::from("| model | size | params | backend | threads | test | t/s |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    for r in &rows {
        out.push_str(&format!("| {model_name} | {} | {:.1} M | {backend} | {threads} | {} | {:.2} ± {:.2} |\n", human(size), params as f64 / 1e6, r.test, r.mean, r.sd));
    }
    out.push_str(&format!("\nweight bytes per decode token: {wbytes} ({})\n", human(wbytes)));
    Ok(out)
}
