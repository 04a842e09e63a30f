// What the attention kernels share (prepended by the host after step.wgsl): a workgroup of WG
// invocations takes one head's query (`qh`, head_dim / 4 vec4s) against CHUNK positions at a
// time; LANES invocations score each position from the K mirror as vec4s, the chunk's max
// and sum of exps are reduced over the first CHUNK invocations (`chunk_reduce`, through
// `red`), and invocation (i, g) sums V's vec4 i over every `groups`-th position from g (groups
// = WG / (head_dim / 4)), the groups' sums added in `vsum`. The kernel declares `kc` and `vc`
// (the K and V mirrors, vec4s) and `st` (its `Step`). Where the chunk's last position is
// `fresh` (the decode token whose K and V rows the same dispatch appends to the mirror), its
// rows come from `kcur` and `vcur` instead of the mirror. The host appends `chunk_reduce`
// (attn_reduce_subgroup.wgsl where the adapter has subgroups, else attn_reduce_shared.wgsl)
// and fills in the entry points' REDUCE_ARGS / REDUCE_KEEP from its directives.

const CHUNK: u32 = 64u;
const WG: u32 = 256u;
const LANES: u32 = WG / CHUNK;
var<workgroup> qh: array<vec4<f32>, 64>;
var<workgroup> sc: array<f32, 64>;
var<workgroup> red: array<f32, 64>;
var<workgroup> lanes: array<f32, WG>;      // per-lane partial scores, position-major
var<workgroup> vsum: array<vec4<f32>, WG>; // per-group V sums, group-major
var<workgroup> kcur: array<vec4<f32>, 64>; // the fresh position's K row of this head (head_dim / 4)
var<workgroup> vcur: array<vec4<f32>, 64>; // and its V row

// Part of q . k over the K row at vec4 index `kr`: its vec4s first, first + step, ... below
// hd4 (unscaled).
fn score_part(kr: u32, hd4: u32, first: u32, step: u32) -> f32 {
    var acc = 0.0;
    for (var d = first; d < hd4; d += step) {
        acc += dot(qh[d], kc[kr + d]);
    }
    return acc;
}

// `score_part` over `kcur`, the fresh position's K row.
fn score_fresh(hd4: u32, first: u32, step: u32) -> f32 {
    var acc = 0.0;
    for (var d = first; d < hd4; d += step) {
        acc += dot(qh[d], kcur[d]);
    }
    return acc;
}

fn chunk_max(v: f32, lid: u32) -> f32 {
    return chunk_reduce(v, lid, true);
}

fn chunk_sum(v: f32, lid: u32) -> f32 {
    return chunk_reduce(v, lid, false);
}

// The first position a query at `pos` sees: its sliding window's (`st.window` positions,
// its own included), or 0.
fn first_seen(pos: u32) -> u32 {
    if (st.window == 0u || pos < st.window) {
        return 0u;
    }
    return pos + 1u - st.window;
}

// The scaled score of position t0 + lid for invocations lid < cnt (-3e38 for the others, and
// for positions before the first one seen, `lo`): LANES invocations score each position,
// every LANES-th vec4 of its K row each, so a row's loads are all in flight at once. kh: the
// head's first vec4 in a mirror row (kv_dim / 4 = kvd4 vec4s). `qh` (and where `fresh`,
// `kcur`) must be published; call from uniform control flow.
fn chunk_scores(t0: u32, cnt: u32, lo: u32, kvd4: u32, kh: u32, hd4: u32, lid: u32, fresh: bool) -> f32 {
    let j = lid / LANES;
    var s = 0.0;
    if (fresh && j + 1u == cnt) {
        s = score_fresh(hd4, lid % LANES, LANES);
    } else if (j < cnt && t0 + j >= lo) {
        s = score_part((t0 + j) * kvd4 + kh, hd4, lid % LANES, LANES);
    }
    let score = position_score(s, cnt, lid);
    return select(score, -3.0e38, t0 + lid < lo);
}

// The scaled score of position t0 + lid for invocations lid < cnt (-3e38 for the others)
// from every invocation's part `s` of it (invocation i: position i / LANES); call from
// uniform control flow.
fn position_score(s: f32, cnt: u32, lid: u32) -> f32 {
    lanes[lid] = s;
    workgroupBarrier();
    var score = -3.0e38;
    if (lid < cnt) {
        var t = 0.0;
        for (var k = 0u; k < LANES; k++) {
            t += lanes[lid * LANES + k];
        }
        score = t * st.scale;
    }
    return score;
}

// Invocation (i, g) = (lid % hd4, lid / hd4): V's vec4 i over the chunk's positions g, g +
// groups, ... below cnt, weighted by `sc` (zero where g >= groups, and for a chunk wholly
// before the first position seen, `lo`, whose partial the merge weighs by zero); a `fresh`
// last position from `vcur` (published), added last as the loop would have.
fn chunk_values(t0: u32, cnt: u32, lo: u32, kvd4: u32, kh: u32, hd4: u32, lid: u32, fresh: bool) -> vec4<f32> {
    let groups = WG / hd4;
    let g = lid / hd4;
    let stored = cnt - u32(fresh);
    var a = vec4<f32>(0.0);
    if (g < groups && t0 + cnt > lo) {
        for (var p = g; p < stored; p += groups) {
            a += sc[p] * vc[(t0 + p) * kvd4 + kh + lid % hd4];
        }
        if (fresh && g == stored % groups) {
            a += sc[stored] * vcur[lid % hd4];
        }
    }
    return a;
}

// Vec4 lid < hd4 of the groups' `v` added up (zero for the other invocations); call from
// uniform control flow.
fn group_total(v: vec4<f32>, hd4: u32, lid: u32) -> vec4<f32> {
    vsum[lid] = v;
    workgroupBarrier();
    var t = vec4<f32>(0.0);
    if (lid < hd4) {
        for (var k = 0u; k < WG / hd4; k++) {
            t += vsum[k * hd4 + lid];
        }
    }
    return t;
}
