//! cortiq-engine: CPU kernels, the llama-family pipeline, tokenizer, sampling and chat.

pub mod chat;
pub mod cpu;
pub mod error;
pub mod generate;
pub mod gpu;
pub mod hub;
pub mod kv;
pub mod model;
pub mod perplexity;
pub mod pipeline;
pub mod sample;
pub mod spm;
pub mod synth;
pub mod tokenizer;

pub use error::EngineError;
