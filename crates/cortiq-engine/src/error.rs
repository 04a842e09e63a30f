//! Engine errors, grouped by what the user has to fix.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Format(#[from] cortiq_core::FormatError),
    #[error("unsupported architecture '{arch}' (this build runs: {supported})")]
    UnsupportedArchitecture { arch: String, supported: String },
    #[error("metadata key '{0}' is missing")]
    MissingMetadata(String),
    #[error("bad model: {0}")]
    BadModel(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("prompt of {tokens} tokens does not fit the context of {ctx} tokens (with {reserve} reserved for the reply)")]
    PromptTooLong { tokens: usize, ctx: usize, reserve: usize },
    #[error("empty prompt: nothing to condition on (the model adds no BOS token)")]
    EmptyPrompt,
    #[error("token id {id} is outside the vocabulary of {vocab}")]
    BadToken { id: u32, vocab: usize },
    #[error("the GPU failed mid-sequence ({0}); the sequence was reset")]
    DeviceFailed(String),
    #[error("chat template: {0}")]
    Template(String),
}
