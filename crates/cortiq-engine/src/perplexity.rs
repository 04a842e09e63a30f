//! Perplexity with llama.cpp's protocol (`llama-perplexity -c N`): the text is tokenized
//! once (BOS first only if the model adds BOS), cut into floor(n / N) chunks of N tokens,
//! each chunk runs from an empty cache (its first token replaced by BOS when the model adds
//! BOS), and the logits at positions N/2 .. N-2 score the tokens at N/2+1 .. N-1.

use crate::error::EngineError;
use crate::generate::Engine;
use crate::pipeline::Session;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct PerplexityResult {
    pub chunks: usize,
    pub scored_tokens: usize,
    pub ppl: f64,
    /// Standard error of the PPL estimate (llama.cpp's ± figure).
    pub ppl_stderr: f64,
}

/// Run the protocol over `text` with chunks of `n_ctx`; `on_chunk(i, n, running_ppl)`.
pub fn perplexity(engine: &Engine, text: &str, n_ctx: usize, mut on_chunk: impl FnMut(usize, usize, f64)) -> Result<PerplexityResult, EngineError> {
    let tokens = engine.tokenize(text)?;
    if n_ctx < 4 {
        return Err(EngineError::BadModel(format!("context {n_ctx} is too small for perplexity")));
    }
    let n_chunks = tokens.len() / n_ctx;
    if n_chunks == 0 {
        return Err(EngineError::PromptTooLong { tokens: tokens.len(), ctx: n_ctx, reserve: 0 });
    }
    let first = n_ctx / 2;
    let vocab = engine.model.cfg.vocab;
    let mut nll = 0f64;
    let mut nll2 = 0f64;
    let mut count = 0usize;
    for c in 0..n_chunks {
        let mut chunk = tokens[c * n_ctx..(c + 1) * n_ctx].to_vec();
        if engine.tokenizer.add_bos {
            if let Some(bos) = engine.tokenizer.bos {
                chunk[0] = bos;
            }
        }
        let mut session = Session::new(Arc::clone(&engine.model), n_ctx);
        let hidden = session.forward(&chunk)?;
        let d = engine.model.cfg.n_embd;
        // logits of positions first .. n_ctx-2, scoring tokens first+1 .. n_ctx-1
        let logits = session.logits(&hidden[first * d..(n_ctx - 1) * d]);
        for (i, row) in logits.chunks_exact(vocab).enumerate() {
            let target = chunk[first + 1 + i] as usize;
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
            let lse = row.iter().map(|&l| (l as f64 - max).exp()).sum::<f64>().ln() + max;
            let v = lse - row[target] as f64;
            nll += v;
            nll2 += v * v;
            count += 1;
        }
        on_chunk(c + 1, n_chunks, (nll / count as f64).exp());
    }
    let mean = nll / count as f64;
    let var = (nll2 / count as f64 - mean * mean).max(0.0);
    let ppl = mean.exp();
    Ok(PerplexityResult { chunks: n_chunks, scored_tokens: count, ppl, ppl_stderr: ppl * (var / (count as f64 - 1.0).max(1.0)).sqrt() })
}
