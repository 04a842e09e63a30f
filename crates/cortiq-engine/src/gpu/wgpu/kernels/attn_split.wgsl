// Split attention (flash-decoding), part 1: workgroup (h, c) takes positions
// [64 c, 64 c + 64) of head h up to `pos` and writes its partial to `part`
// (n_head, chunks, head_dim + 2): the exp-weighted V sum, the max score, the sum of exps.
// 256 invocations: LANES of them score each position (every LANES-th vec4 of the row each,
// so a row's loads are all in flight at once); then invocation (i, g) sums V's vec4 i over
// every `groups`-th position from g, and the groups' sums are added in workgroup memory.
// With `st.fold` the token's RoPE and mirror append happen here (no rope_store dispatch
// before): q and k_new arrive unrotated, every workgroup rotates its head's query as it
// loads it, the chunk holding `pos` takes that position's K (rotated) and V rows from k_new
// and v_new instead of the mirror, and of those workgroups the KV head's first query head's
// appends them to the mirror (no workgroup of this dispatch reads that mirror row). Without
// it q is rotated and the mirror holds `pos` already. The host fills the head-norm line:
// nothing for the llama block, for Gemma 3's the q head and the fresh K row RMS-normed with
// their weights before they are rotated (`attn_split_normed_source`).
// head_dim % 4 == 0, head_dim <= 256.
// `Step`, the per-token block, comes from step.wgsl, the chunk helpers from attn_chunk.wgsl,
// `rotated` from rope_head.wgsl, `place_rows` and `chunk_partial` from attn_partial.wgsl (all
// prepended by the host).

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;          // (n_head * head_dim / 4)
@group(0) @binding(1) var<storage, read> k_new: array<vec4<f32>>;      // (kv_dim / 4) the token's, unrotated (read with `fold`)
@group(0) @binding(2) var<storage, read> v_new: array<vec4<f32>>;      // (kv_dim / 4) (read with `fold`)
@group(0) @binding(3) var<storage, read_write> kc: array<vec4<f32>>;   // (capacity, kv_dim / 4)
@group(0) @binding(4) var<storage, read_write> vc: array<vec4<f32>>;   // (capacity, kv_dim / 4)
@group(0) @binding(5) var<storage, read_write> part: array<f32>;       // (n_head, chunks, head_dim + 2)
@group(0) @binding(6) var<uniform> st: Step;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    REDUCE_KEEP
    let h = wg.x;
    let c = wg.y;
    let hd4 = st.head_dim / 4u;
    let kvd4 = st.n_head_kv * hd4;
    let group = st.n_head / st.n_head_kv;
    let kvh = h / group;
    let kh = kvh * hd4;
    let t0 = c * CHUNK;
    let cnt = min(CHUNK, st.pos + 1u - t0);
    let fresh = st.fold != 0u && t0 + cnt == st.pos + 1u;
    if (st.fold != 0u) {
        var q4 = vec4<f32>(0.0);
        var k4 = vec4<f32>(0.0);
        var v4 = vec4<f32>(0.0);
        if (lid < hd4) {
            q4 = q[h * hd4 + lid];
            if (fresh) {
                k4 = k_new[kh + lid];
                v4 = v_new[kh + lid];
            }
        }
        HEAD_NORMS
        place_rows(q4, k4, v4, h % group == 0u, kvd4, kh, hd4, lid, fresh);
    } else if (lid < hd4) {
        qh[lid] = q[h * hd4 + lid];
    }
    workgroupBarrier();
    chunk_partial(h, c, t0, cnt, kvd4, kh, hd4, lid, fresh);
}
