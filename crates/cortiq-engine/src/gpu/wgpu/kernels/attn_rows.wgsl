// Causal attention of a prompt chunk's rows over the KV mirror (the batched prefill graph):
// workgroup (h, y) takes query row y of head h, at position `pos + y`, over mirror positions
// 0 ..= pos + y (from the first its sliding window sees, `first_seen`, on such a layer; its
// chunks before that one skipped) in chunks of CHUNK with a running max and sum (online
// softmax), so no partials leave the workgroup. 256 invocations, as the decode split kernel:
// LANES of them score each position of a chunk (every LANES-th vec4 of the K row each), then
// invocation (i, g) sums V's vec4 i over every `groups`-th position of the chunk from g; the
// groups' sums are added once, at the end (head_dim % 4 == 0, head_dim <= 256).
// `Step` (first row's position, head geometry, scale) comes from step.wgsl, the chunk helpers
// from attn_chunk.wgsl (both prepended by the host).

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;          // (rows, n_head * head_dim / 4), after RoPE
@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;         // (capacity, kv_dim / 4)
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;         // (capacity, kv_dim / 4)
@group(0) @binding(3) var<storage, read_write> att: array<vec4<f32>>;  // (rows, n_head * head_dim / 4)
@group(0) @binding(4) var<uniform> st: Step;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    REDUCE_KEEP
    let h = wg.x;
    let y = wg.y;
    let hd4 = st.head_dim / 4u;
    let kvd4 = st.n_head_kv * hd4;
    let kvh = h / (st.n_head / st.n_head_kv);
    let qrow = (y * st.n_head + h) * hd4;
    let n = st.pos + y + 1u;
    if (lid < hd4) {
        qh[lid] = q[qrow + lid];
    }
    let kh = kvh * hd4;
    var m = -3.0e38;
    var l = 0.0;
    var acc = vec4<f32>(0.0); // this invocation's V sum (`chunk_values`), rescaled chunk by chunk
    let lo = first_seen(n - 1u);
    for (var t0 = lo / CHUNK * CHUNK; t0 < n; t0 += CHUNK) {
        workgroupBarrier(); // `qh` written; the previous chunk's `sc` and `lanes` read
        let cnt = min(CHUNK, n - t0);
        let score = chunk_scores(t0, cnt, lo, kvd4, kh, hd4, lid, false);
        let mn = max(m, chunk_max(score, lid));
        var e = 0.0;
        if (lid < cnt) {
            e = exp(score - mn);
        }
        if (lid < CHUNK) {
            sc[lid] = e;
        }
        let alpha = exp(m - mn);
        l = l * alpha + chunk_sum(e, lid); // its barriers also publish `sc`
        m = mn;
        acc = acc * alpha + chunk_values(t0, cnt, lo, kvd4, kh, hd4, lid, false);
    }
    let t = group_total(acc, hd4, lid);
    if (lid < hd4) {
        att[qrow + lid] = t / l;
    }
}
