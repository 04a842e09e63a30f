// Causal attention of a prompt chunk's rows over the KV mirror (the batched prefill graph):
// workgroup (h, y) takes query row y of head h, at position `pos + y`, over mirror positions
// 0 ..= pos + y in chunks of 64 with a running max and sum (online softmax), so no partials
// leave the workgroup. Each invocation scores one position of a chunk, then owns output
// dimensions lid, lid + 64, ... (head_dim % 4 == 0, head_dim <= 256).
// `Step` (first row's position, head geometry, scale) comes from step.wgsl, `score_part` /
// `chunk_max` / `chunk_sum` from attn_chunk.wgsl (both prepended by the host).

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;   // (rows, n_head * head_dim / 4), after RoPE
@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;  // (capacity, kv_dim / 4)
@group(0) @binding(2) var<storage, read> vc: array<f32>;        // (capacity, kv_dim)
@group(0) @binding(3) var<storage, read_write> att: array<f32>; // (rows, n_head * head_dim)
@group(0) @binding(4) var<uniform> st: Step;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let y = wg.y;
    let hd = st.head_dim;
    let kvd = st.n_head_kv * hd;
    let kvh = h / (st.n_head / st.n_head_kv);
    let qrow = (y * st.n_head + h) * hd;
    let n = st.pos + y + 1u;
    let hd4 = hd / 4u;
    if (lid < hd4) {
        qh[lid] = q[qrow / 4u + lid];
    }
    // The value dimensions this invocation sums (clamped into the head; the extra ones are
    // not stored).
    let dims = min(vec4<u32>(lid, lid + 64u, lid + 128u, lid + 192u), vec4<u32>(hd - 1u));
    var m = -3.0e38;
    var l = 0.0;
    var acc = vec4<f32>(0.0); // dimensions lid + 64 j
    for (var t0 = 0u; t0 < n; t0 += CHUNK) {
        workgroupBarrier();
        let cnt = min(CHUNK, n - t0);
        var s = -3.0e38;
        if (lid < cnt) {
            s = score_part(((t0 + lid) * kvd + kvh * hd) / 4u, hd4, 0u, 1u) * st.scale;
        }
        let mn = max(m, chunk_max(s, lid));
        var e = 0.0;
        if (lid < cnt) {
            e = exp(s - mn);
        }
        sc[lid] = e;
        let alpha = exp(m - mn);
        l = l * alpha + chunk_sum(e, lid);
        m = mn;
        var part = vec4<f32>(0.0);
        for (var j = 0u; j < cnt; j++) {
            let w = sc[j];
            let r = (t0 + j) * kvd + kvh * hd;
            part += w * vec4<f32>(vc[r + dims.x], vc[r + dims.y], vc[r + dims.z], vc[r + dims.w]);
        }
        acc = acc * alpha + part;
    }
    let out = qrow + lid;
    for (var j = 0u; j < 4u; j++) {
        if (lid + 64u * j < hd) {
            att[out + 64u * j] = acc[j] / l;
        }
    }
}
