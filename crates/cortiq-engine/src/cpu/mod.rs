//! CPU kernels: the reference every device kernel is tested against, and the fallback
//! whenever the GPU facade declines.

pub mod attention;
pub mod dot;
pub mod f16;
pub mod matmul;
pub mod ops;
pub mod pool;
pub mod quant;
