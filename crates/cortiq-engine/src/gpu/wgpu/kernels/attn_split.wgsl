// Split attention (flash-decoding), part 1: workgroup (h, c) takes positions
// [64 c, 64 c + 64) of head h up to `pos` and writes its partial to `part`
// (n_head, chunks, head_dim + 2): the exp-weighted V sum, the max score, the sum of exps.
// head_dim <= 256.
// `Step`, the per-token block, comes from step.wgsl, `score` / `chunk_max` / `chunk_sum`
// from attn_chunk.wgsl (both prepended by the host).

@group(0) @binding(0) var<storage, read> q: array<f32>;          // (n_head * head_dim)
@group(0) @binding(1) var<storage, read> kc: array<f32>;         // (capacity, kv_dim)
@group(0) @binding(2) var<storage, read> vc: array<f32>;         // (capacity, kv_dim)
@group(0) @binding(3) var<storage, read_write> part: array<f32>; // (n_head, chunks, head_dim + 2)
@group(0) @binding(4) var<uniform> st: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let c = wg.y;
    let hd = st.head_dim;
    let kvd = st.n_head_kv * hd;
    let kvh = h / (st.n_head / st.n_head_kv);
    let t0 = c * CHUNK;
    let n = st.pos + 1u;
    let cnt = min(CHUNK, n - t0);
    for (var d = lid; d < hd; d += CHUNK) {
        qh[d] = q[h * hd + d];
    }
    workgroupBarrier();
    var s = -3.0e38;
    if (lid < cnt) {
        s = score((t0 + lid) * kvd + kvh * hd, hd);
    }
    let m = chunk_max(s, lid);
    var e = 0.0;
    if (lid < cnt) {
        e = exp(s - m);
    }
    sc[lid] = e;
    let total = chunk_sum(e, lid);
    let out = (h * st.chunks + c) * (hd + 2u);
    for (var d = lid; d < hd; d += CHUNK) {
        var a = 0.0;
        for (var j = 0u; j < cnt; j++) {
            a += sc[j] * vc[(t0 + j) * kvd + kvh * hd + d];
        }
        part[out + d] = a;
    }
    if (lid == 0u) {
        part[out + hd] = m;
        part[out + hd + 1u] = total;
    }
}
