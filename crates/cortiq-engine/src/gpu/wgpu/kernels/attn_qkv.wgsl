// Split attention that computes its own query (the int8 token graph, `qkv_attn.rs`): no
// QKV dispatch before it. Workgroup (h, c):
// 1. loads its chunk's K and V mirror rows older than this token into registers (K:
//    invocation i scores position i / LANES from its vec4s i % LANES, + LANES, ...; V:
//    invocation i sums vec4 i % hd4 of positions i / hd4, + groups, ...): they do not depend
//    on what follows, so their latency passes under it;
// 2. takes head h's rows of Q (and where the chunk holds `pos`, the KV head's rows of K and
//    V) against the RMS-normed int8 row (`XMode::Int8Norm`: x * the norm's weights as int8
//    units, x's squares in the scales' fourth lane, the norm's scale applied to the finished
//    sums) by the int8 kernels' per-unit rule: invocation i takes row i / L of each matrix,
//    its lane i % L (L = WG / head_dim) strides over x's units, and the rows' sums are added
//    over their L lanes in workgroup memory;
// 3. is attn_split.wgsl with `fold` from there: RoPE on the query and the fresh key, the KV
//    head's first query head appends the fresh K and V rows to the mirror, the chunk's
//    softmax over the loaded rows, its partial to `part`.
// Each chunk's workgroups redo their head's query; the models this is chosen for have a few
// hundred columns. head_dim is 32, 64 or 128.
// The host prepends step.wgsl, attn_chunk.wgsl, rope_head.wgsl, attn_partial.wgsl and the
// Params block, fills in NV and the generated lines (GEN_*: one line per loaded vec4, named
// values and constant indices only, so they stay in registers), and appends the matrices'
// codec functions (`unit_dot8_m0`: Q, `_m1`: K, `_m2`: V) and the chunk reduction.

struct Multi {
    p: array<Params, 3>,
    starts: vec4<u32>,
}

@group(0) @binding(0) var<storage, read> wq0: array<vec4<u32>>;        // Q's payload, by vec4
@group(0) @binding(1) var<storage, read> ws0: array<u32>;              // the same buffer, by word
@group(0) @binding(2) var<storage, read> wq1: array<vec4<u32>>;        // K's
@group(0) @binding(3) var<storage, read> ws1: array<u32>;
@group(0) @binding(4) var<storage, read> wq2: array<vec4<u32>>;        // V's
@group(0) @binding(5) var<storage, read> ws2: array<u32>;
@group(0) @binding(6) var<storage, read> x: array<vec4<u32>>;          // (units, 2) int8 x * norm weights
@group(0) @binding(7) var<storage, read> x2: array<vec4<f32>>;         // (units) d, d * sum, sum, x's squares
@group(0) @binding(8) var<storage, read_write> kc: array<vec4<f32>>;   // (capacity, kv_dim / 4)
@group(0) @binding(9) var<storage, read_write> vc: array<vec4<f32>>;   // (capacity, kv_dim / 4)
@group(0) @binding(10) var<storage, read_write> part: array<f32>;      // (n_head, chunks, head_dim + 2)
@group(0) @binding(11) var<uniform> st: Step;
@group(0) @binding(12) var<uniform> mp: Multi;

const NV: u32 = GEN_NVu;                // K vec4s an invocation scores, V vec4s it sums (head_dim / 16)
var<workgroup> dims: array<f32, 768>;   // the head's q, then k, then v (head_dim each, at 0, 256, 512)

// Dimensions 4 i .. 4 i + 3 of the vector at `base` in `dims`.
fn dims4(base: u32, i: u32) -> vec4<f32> {
    let j = base + 4u * i;
    return vec4<f32>(dims[j], dims[j + 1u], dims[j + 2u], dims[j + 3u]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    REDUCE_KEEP
    let h = wg.x;
    let c = wg.y;
    let hd = st.head_dim;
    let hd4 = hd / 4u;
    let kvd4 = st.n_head_kv * hd4;
    let group = st.n_head / st.n_head_kv;
    let kvh = h / group;
    let kh = kvh * hd4;
    let t0 = c * CHUNK;
    let cnt = min(CHUNK, st.pos + 1u - t0);
    let fresh = t0 + cnt == st.pos + 1u;
    let stored = cnt - u32(fresh); // the chunk's positions already in the mirror
    // 1. The mirror rows (k_i: vec4 lid % LANES + LANES i of position j; v_i: position
    // g + groups i).
    let j = lid / LANES;
    let kr = (t0 + j) * kvd4 + kh + lid % LANES;
    let groups = WG / hd4;
    let g = lid / hd4;
    let vr = (t0 + g) * kvd4 + kh + lid % hd4;
    GEN_LOADS
    // 2. This lane's share of row r's units: (q, k, v, x's squares).
    let units = mp.p[0].units;
    let lanes_per_row = WG / hd;
    let r = lid / lanes_per_row;
    let iq = (h * hd + r) * units;
    let ik = (kvh * hd + r) * units;
    var acc = vec4<f32>(0.0);
    for (var k = lid % lanes_per_row; k < units; k += lanes_per_row) {
        let xa = x[2u * k];
        let xb = x[2u * k + 1u];
        let xs = x2[k];
        acc.x += unit_dot8_m0(iq + k, xa, xb, xs);
        if (fresh) {
            acc.y += unit_dot8_m1(ik + k, xa, xb, xs);
            acc.z += unit_dot8_m2(ik + k, xa, xb, xs);
        }
        acc.w += xs.w;
    }
    vsum[lid] = acc;
    workgroupBarrier();
    if (lid < hd) {
        var t = vec4<f32>(0.0);
        for (var l = 0u; l < lanes_per_row; l++) {
            t += vsum[lid * lanes_per_row + l];
        }
        let scale = inverseSqrt(t.w / f32(units * 32u) + mp.p[0].eps);
        dims[lid] = t.x * scale;
        dims[256u + lid] = t.y * scale;
        dims[512u + lid] = t.z * scale;
    }
    workgroupBarrier();
    // 3. RoPE, the fresh rows, the chunk.
    place_rows(dims4(0u, lid % hd4), dims4(256u, lid % hd4), dims4(512u, lid % hd4), h % group == 0u, kvd4, kh, hd4, lid, fresh);
    workgroupBarrier();
    var s = 0.0;
    if (fresh && j + 1u == cnt) {
        s = score_fresh(hd4, lid % LANES, LANES);
    } else if (j < cnt) {
        GEN_SCORE
    }
    let w = chunk_softmax(position_score(s, cnt, lid), cnt, lid);
    // V summed as chunk_values does: the stored positions in order, the fresh one last.
    var a = vec4<f32>(0.0);
    GEN_VALUES
    if (fresh && g == stored % groups) {
        a += sc[stored] * vcur[lid % hd4];
    }
    write_partial(h, c, w, group_total(a, hd4, lid), hd4, lid);
}
