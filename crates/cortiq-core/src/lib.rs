//! cortiq-core: the model on disk. GGUF, safetensors and CMF readers, the CMF writer,
//! the tensor directory and the quant codecs with their CPU reference dot products.
//! No compute scheduling lives here.

pub mod cmf;
pub mod codec;
pub mod error;
pub mod gguf;
pub mod model_file;
pub mod rng;
pub mod safetensors_dir;
pub mod value;

pub use codec::Codec;
pub use error::FormatError;
pub use model_file::{ModelFile, TensorInfo};
pub use value::Value;
