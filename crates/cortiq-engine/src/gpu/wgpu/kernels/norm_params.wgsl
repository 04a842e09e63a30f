// The norm kernels' uniform block (`NormBlock` in graph.rs), prepended by the host to
// norm.wgsl, head_norm.wgsl and post_norm.wgsl: `n` values a row (or a head), `add` (norm.wgsl:
// add the residual first), `eps`, `row0` (norm.wgsl: the first input row).
struct NormParams {
    n: u32,
    add: u32,
    eps: f32,
    row0: u32,
}
