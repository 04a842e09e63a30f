// What the decode split kernels share past the chunk helpers (prepended by the host after
// attn_chunk.wgsl and rope_head.wgsl; the kernel declares `kc`, `vc` and `part` (n_head,
// chunks, head_dim + 2)): the head's query and a fresh position's rows put in place, then
// the chunk's partial.

// The token's RoPE and mirror append (`fold`): invocation lid < hd4's vec4 of the head's
// query (`q4`, unrotated) rotated into `qh`; where `fresh` (the chunk holds `pos`), its vec4
// of the position's K row (`k4`, unrotated) rotated into `kcur` and of its V row (`v4`) into
// `vcur`, both appended to the mirror row `pos` by the KV head's first query head
// (`appends`; no workgroup of the dispatch reads that row). Call from uniform control flow;
// the caller publishes the results with a barrier.
fn place_rows(q4: vec4<f32>, k4: vec4<f32>, v4: vec4<f32>, appends: bool, kvd4: u32, kh: u32, hd4: u32, lid: u32, fresh: bool) {
    if (lid < hd4) {
        rope_in[lid] = q4;
    }
    workgroupBarrier();
    var qr = vec4<f32>(0.0);
    if (lid < hd4) {
        qr = rotated(lid, st.pos);
    }
    workgroupBarrier();
    if (lid < hd4) {
        qh[lid] = qr;
    }
    if (fresh) {
        if (lid < hd4) {
            rope_in[lid] = k4;
        }
        workgroupBarrier();
        if (lid < hd4) {
            let k_rot = rotated(lid, st.pos);
            kcur[lid] = k_rot;
            vcur[lid] = v4;
            if (appends) {
                kc[st.pos * kvd4 + kh + lid] = k_rot;
                vc[st.pos * kvd4 + kh + lid] = v4;
            }
        }
    }
}

// Head h's chunk c (positions t0 .. t0 + cnt - 1) scored against `qh`, its partial written
// to `part`. Call from uniform control flow with `qh` (and where `fresh`, `kcur` and `vcur`)
// published.
fn chunk_partial(h: u32, c: u32, t0: u32, cnt: u32, kvd4: u32, kh: u32, hd4: u32, lid: u32, fresh: bool) {
    let lo = first_seen(st.pos);
    let score = chunk_scores(t0, cnt, lo, kvd4, kh, hd4, lid, fresh);
    let w = chunk_softmax(score, cnt, lid);
    let t = group_total(chunk_values(t0, cnt, lo, kvd4, kh, hd4, lid, fresh), hd4, lid);
    write_partial(h, c, w, t, hd4, lid);
}

// The chunk's max score and sum of exps, each position's exp(score - max) in `sc`
// (published); call from uniform control flow.
fn chunk_softmax(score: f32, cnt: u32, lid: u32) -> vec2<f32> {
    let m = chunk_max(score, lid);
    var e = 0.0;
    if (lid < cnt) {
        e = exp(score - m);
    }
    if (lid < CHUNK) {
        sc[lid] = e;
    }
    return vec2<f32>(m, chunk_sum(e, lid)); // its barriers also publish `sc`
}

// Head h's chunk c partial into `part`: the exp-weighted V sum `t` (vec4 lid < hd4), the
// max score and the sum of exps (`w`).
fn write_partial(h: u32, c: u32, w: vec2<f32>, t: vec4<f32>, hd4: u32, lid: u32) {
    let out = (h * st.chunks + c) * (st.head_dim + 2u);
    if (lid < hd4) {
        for (var k = 0u; k < 4u; k++) {
            part[out + 4u * lid + k] = t[k];
        }
    }
    if (lid == 0u) {
        part[out + st.head_dim] = w.x;
        part[out + st.head_dim + 1u] = w.y;
    }
}
