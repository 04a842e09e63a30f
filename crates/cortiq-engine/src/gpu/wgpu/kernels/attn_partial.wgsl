// The split attention's chunk after its query (and a fresh position's K and V rows) are in
// place (prepended by the host to the split kernels, after attn_chunk.wgsl; the kernel
// declares `part` (n_head, chunks, head_dim + 2)).

// Head h's chunk c (positions t0 .. t0 + cnt - 1) scored against `qh`, its partial written
// to `part`. Call from uniform control flow with `qh` (and where `fresh`, `kcur` and `vcur`)
// published.
fn chunk_partial(h: u32, c: u32, t0: u32, cnt: u32, kvd4: u32, kh: u32, hd4: u32, lid: u32, fresh: bool) {
    let score = chunk_scores(t0, cnt, kvd4, kh, hd4, lid, fresh);
    let w = chunk_softmax(score, cnt, lid);
    let t = group_total(chunk_values(t0, cnt, kvd4, kh, hd4, lid, fresh), hd4, lid);
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
