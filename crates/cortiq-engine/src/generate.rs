//! Text generation: a loaded model + tokenizer, prompt in, streamed text out.

use crate::chat::{ChatTemplate, Message};
use crate::error::EngineError;
use crate::model::Llama;
use crate::pipeline::Session;
use crate::sample::{Sampler, SamplerConfig};
use crate::tokenizer::{StreamDecoder, Tokenizer};
use cortiq_core::ModelFile;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Default context length when the user does not ask for one (the trained context caps it).
pub const DEFAULT_CTX: usize = 4096;

/// A model ready to generate: weights, tokenizer, chat template.
pub struct Engine {
    pub model: Arc<Llama>,
    pub tokenizer: Tokenizer,
    pub template: Option<ChatTemplate>,
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndOfGeneration,
    MaxTokens,
    ContextFull,
    Cancelled,
}

/// What a decode step left for the sampler: the logits, its top-k candidates, or the token
/// a greedy device pick already chose.
pub enum Step {
    Logits(Vec<f32>),
    /// The sampler's candidates (`Session::step_top_k`).
    Candidates(Vec<(u32, f32)>),
    Picked(u32),
}

impl Step {
    /// The next token from this step, as `sampler` draws it (`history`: the tokens so far,
    /// for its repetition penalty).
    pub fn next_token(&self, sampler: &mut Sampler, history: &[u32]) -> u32 {
        match self {
            Step::Picked(t) => *t,
            Step::Logits(l) => sampler.sample(l, history),
            Step::Candidates(c) => sampler.sample_candidates(c),
        }
    }
}

/// One decode step of `token`, read back in the form `sampler` needs: a plain argmax
/// sampler only the device's pick, a top-k sampler its candidates (which the device may also
/// draw the next token from, ahead), any other the logits.
pub fn decode_step(session: &mut Session, sampler: &Sampler, token: u32) -> Result<Step, EngineError> {
    Ok(match sampler.candidates_needed() {
        _ if sampler.is_plain_argmax() => Step::Picked(session.step_greedy(token)?),
        Some(k) => Step::Candidates(session.step_top_k(token, k, sampler.draw_spec())?),
        None => Step::Logits(session.step(token)?),
    })
}

/// Counts and times of one generation.
#[derive(Debug, Clone)]
pub struct GenerationStats {
    pub prompt_tokens: usize,
    pub generated: Vec<u32>,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub stop: StopReason,
}

impl Engine {
    /// Open a model file and build everything generation needs.
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let file = Arc::new(ModelFile::open(path)?);
        let tokenizer = Tokenizer::from_model(&file)?;
        let model = Arc::new(Llama::load(Arc::clone(&file))?);
        if tokenizer.vocab_size > model.cfg.vocab {
            return Err(EngineError::BadModel(format!("tokenizer has {} tokens but the embedding only {}", tokenizer.vocab_size, model.cfg.vocab)));
        }
        let template = match file.meta_str("tokenizer.chat_template") {
            Some(src) => {
                let name = |id: Option<u32>| id.and_then(|i| tokenizer.token_text(i)).unwrap_or_default();
                Some(ChatTemplate::new(src, &name(tokenizer.bos), &name(tokenizer.eos))?)
            }
            None => None,
        };
        Ok(Engine { model, tokenizer, template })
    }

    /// Tokens of a raw prompt (BOS as the model's metadata says).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        self.tokenizer.encode(text, self.tokenizer.add_bos)
    }

    /// The prompt text for a conversation (falls back to plain concatenation without a template).
    pub fn chat_prompt(&self, messages: &[Message]) -> Result<String, EngineError> {
        match &self.template {
            Some(t) => t.render(messages),
            None => Ok(messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")),
        }
    }

    /// Generate up to `max_tokens` after `prompt` in `session` (which may hold earlier turns),
    /// calling `on_text` with each completed piece of text.
    pub fn generate(
        &self,
        session: &mut Session,
        prompt: &[u32],
        max_tokens: usize,
        sampler: SamplerConfig,
        cancel: &AtomicBool,
        mut on_text: impl FnMut(&str),
    ) -> Result<GenerationStats, EngineError> {
        if prompt.is_empty() {
            return Err(EngineError::EmptyPrompt);
        }
        let room = session.n_ctx() - session.len();
        if prompt.len() >= room {
            return Err(EngineError::PromptTooLong { tokens: session.len() + prompt.len(), ctx: session.n_ctx(), reserve: 1 });
        }
        let mut history: Vec<u32> = prompt.to_vec();
        let mut sampler = Sampler::new(sampler);
        let t0 = std::time::Instant::now();
        let mut last = Step::Logits(session.prefill(prompt)?);
        let prefill_s = t0.elapsed().as_secs_f64();
        let arm = session.begin_generation();
        let mut token_times = Vec::new();
        let t1 = std::time::Instant::now();
        let mut decoder = StreamDecoder::new();
        let mut generated = Vec::new();
        let stop = loop {
            if cancel.load(Ordering::Relaxed) {
                break StopReason::Cancelled;
            }
            if generated.len() >= max_tokens {
                break StopReason::MaxTokens;
            }
            let next = last.next_token(&mut sampler, &history);
            if self.tokenizer.is_end_of_generation(next) {
                break StopReason::EndOfGeneration;
            }
            generated.push(next);
            history.push(next);
            if let Some(piece) = decoder.push(&self.tokenizer, next)? {
                on_text(&piece);
            }
            if generated.len() >= max_tokens {
                break StopReason::MaxTokens;
            }
            if session.len() >= session.n_ctx() {
                break StopReason::ContextFull;
            }
            let t = std::time::Instant::now();
            last = decode_step(session, &sampler, next)?;
            token_times.push(t.elapsed());
        };
        session.gpu.record_generation(arm, &token_times);
        Ok(GenerationStats { prompt_tokens: prompt.len(), generated, prefill_s, decode_s: t1.elapsed().as_secs_f64(), stop })
    }
}
