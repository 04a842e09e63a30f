// Split attention (flash-decoding), part 1: workgroup (h, c) takes positions
// [64 c, 64 c + 64) of head h up to `pos` and writes its partial to `part`
// (n_head, chunks, head_dim + 2): the exp-weighted V sum, the max score, the sum of exps.
// 256 invocations: LANES of them score each position (every LANES-th vec4 of the row each,
// so a row's loads are all in flight at once); then invocation (i, g) sums V's vec4 i over
// every `groups`-th position from g, and the groups' sums are added in workgroup memory.
// head_dim % 4 == 0, head_dim <= 256.
// `Step`, the per-token block, comes from step.wgsl, the chunk helpers from attn_chunk.wgsl
// (both prepended by the host).

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;    // (n_head * head_dim / 4)
@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;   // (capacity, kv_dim / 4)
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;   // (capacity, kv_dim / 4)
@group(0) @binding(3) var<storage, read_write> part: array<f32>; // (n_head, chunks, head_dim + 2)
@group(0) @binding(4) var<uniform> st: Step;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let c = wg.y;
    let hd4 = st.head_dim / 4u;
    let kvd4 = st.n_head_kv * hd4;
    let kvh = h / (st.n_head / st.n_head_kv);
    let t0 = c * CHUNK;
    let cnt = min(CHUNK, st.pos + 1u - t0);
    if (lid < hd4) {
        qh[lid] = q[h * hd4 + lid];
    }
    workgroupBarrier();
    let kh = kvh * hd4;
    let score = chunk_scores(t0, cnt, kvd4, kh, hd4, lid);
    let m = chunk_max(score, lid);
    var e = 0.0;
    if (lid < cnt) {
        e = exp(score - m);
    }
    if (lid < CHUNK) {
        sc[lid] = e;
    }
    let total = chunk_sum(e, lid); // its barriers also publish `sc`
    let t = group_total(chunk_values(t0, cnt, kvd4, kh, hd4, lid), hd4, lid);
    let out = (h * st.chunks + c) * (st.head_dim + 2u);
    if (lid < hd4) {
        for (var k = 0u; k < 4u; k++) {
            part[out + 4u * lid + k] = t[k];
        }
    }
    if (lid == 0u) {
        part[out + st.head_dim] = m;
        part[out + st.head_dim + 1u] = total;
    }
}
