//! Model architectures as plain configurations plus weight views.

pub mod llama;

pub use llama::{Family, Llama, LlamaConfig};
