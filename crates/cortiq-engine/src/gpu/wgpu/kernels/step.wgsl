// The token graph's per-token uniform block (`StepBlock` in graph.rs), shared by the
// RoPE and attention kernels.
struct Step {
    pos: u32,
    n_head: u32,
    n_head_kv: u32,
    head_dim: u32,
    rot: u32,
    neox: u32,
    chunks: u32,
    // Nonzero: the decode token's RoPE and mirror append run in attn_split.wgsl.
    fold: u32,
    base: f32,
    scale: f32,
    // A prompt chunk's rows (attn_coop.wgsl; 0 in the token graph).
    rows: u32,
    // A sliding-window layer's window in positions, the query's own included (0: none).
    window: u32,
    // Gemma 3's q/k head norms' epsilon (norm_rope.wgsl, attn_split_normed), then padding to
    // 16 words.
    eps: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}
