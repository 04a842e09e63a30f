// Causal attention of a prompt chunk's rows over the KV mirror on the adapter's matrix units
// (cooperative matrices, 16 x 16 x 16, f16 inputs, f32 sums): workgroup (h, b) takes query
// rows BM b .. BM b + BM - 1 of head h (BM = 16 SG; subgroup g the 16 from BM b + 16 g), over
// mirror positions 0 ..= its last row's, T positions a chunk, each chunk's K (and V) rows
// staged in workgroup memory as f16 once for all the workgroup's rows. A matrix's elements
// cannot be scaled row by row, so there is no running rescale: a first pass over the
// positions finds each row's largest score, the second sums p = exp(score - max) (rounded to
// f16 as multiplied, and summed as rounded) and P V; the output is P V / sum p. q is scaled
// by `st.scale` before its f16 rounding, and a scaled q past f16's range sets the guard word
// `bad` (f16_guard.wgsl; K and V are f16 in the CPU path's cache, so they are not guarded).
// Lane l of a subgroup works on row l % 16 of its sixteen, positions 16 (l / 16) .. of each
// chunk, where the softmax is elementwise.
// The host prepends the `enable` directives, step.wgsl, `HD` (head_dim: a multiple of 16,
// at most 128) and `SG`, and writes out the lines of the named matrices: the rows' q as
// HD / 16 A matrices q<i>, a chunk's two 16 x 16 score tiles into `sm`, the HD / 16 sums
// o<i>, their products with P and V, and each sum out through `emit`.

@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;          // (rows, n_head * head_dim / 4), after RoPE
@group(0) @binding(1) var<storage, read> kc: array<vec4<f32>>;         // (capacity, kv_dim / 4)
@group(0) @binding(2) var<storage, read> vc: array<vec4<f32>>;         // (capacity, kv_dim / 4)
@group(0) @binding(3) var<storage, read_write> att: array<vec4<f32>>;  // (rows, n_head * head_dim / 4)
@group(0) @binding(4) var<storage, read_write> bad: array<u32>;        // (1) the f16 guard (f16_guard.wgsl)
@group(0) @binding(5) var<uniform> st: Step;

const T: u32 = 32u;
const BM: u32 = 16u * SG;
const INVOCATIONS: u32 = 32u * SG;
const HD4: u32 = HD / 4u;
// A staged row in vec4<f16>s: HD values and 8 of padding, so that the eight 16-byte row
// pieces a matrix load reads at once fall on distinct banks.
const HP4: u32 = HD4 + 2u;
// A row of P: T values and 8 of padding (f16s).
const PP: u32 = T + 8u;
// Staged rows: a chunk's K (rows 0 .. T) and V (T .. 2T); first the workgroup's q (BM <= 2T).
const KV_ROWS: u32 = 2u * T;
// Vec4s of a chunk's K (or V) each invocation loads.
const KV_PER: u32 = T * HD4 / INVOCATIONS;

var<workgroup> kv: array<vec4<f16>, KV_ROWS * HP4>;  // [row][HD / 4]
var<workgroup> sm: array<f32, SG * 16u * T>;         // [subgroup][position][row]: a chunk's scores
var<workgroup> pm: array<f16, SG * 16u * PP>;        // [subgroup][row][position]: its p

// Chunk t0's rows of one mirror (values: V, else K) for KV head `kh` (its first vec4 in a
// mirror row of kvd4), invocation lid's share, as f16; positions at or past n are zero.
fn load_rows(t0: u32, n: u32, kvd4: u32, kh: u32, lid: u32, values: bool) -> array<vec4<f16>, KV_PER> {
    var r: array<vec4<f16>, KV_PER>;
    for (var i = 0u; i < KV_PER; i++) {
        let e = lid + INVOCATIONS * i;
        let t = t0 + e / HD4;
        var v = vec4<f32>(0.0);
        if (t < n && values) {
            v = vc[t * kvd4 + kh + e % HD4];
        } else if (t < n) {
            v = kc[t * kvd4 + kh + e % HD4];
        }
        r[i] = vec4<f16>(v);
    }
    return r;
}

// `load_rows`' values into staged rows `row0` ...
fn store_rows(r: array<vec4<f16>, KV_PER>, row0: u32, lid: u32) {
    for (var i = 0u; i < KV_PER; i++) {
        let e = lid + INVOCATIONS * i;
        kv[(row0 + e / HD4) * HP4 + e % HD4] = r[i];
    }
}

// The 16 x 16 sum `c` of subgroup g (the workgroup's rows 16 g .., those below `rows_here`;
// output dimensions 16 i ..), divided by each row's sum of p (`l`, the lane's row's), into
// att through the subgroup's slot of `sm`: lane l writes row `row` = l % 16, dimensions
// 16 i + 8 (l / 16) .. Call from uniform control flow.
fn emit(c: coop_mat16x16<f32, C>, i: u32, g: u32, lane: u32, row: u32, l: f32, h: u32, r0: u32, rows_here: u32) {
    coopStoreT(c, &sm[16u * T * g], 16u);
    workgroupBarrier();
    let r = 16u * g + row;
    if (r < rows_here) {
        let s = 16u * T * g + 16u * row + 8u * (lane / 16u);
        let at = ((r0 + r) * st.n_head + h) * HD4 + 4u * i + 2u * (lane / 16u);
        att[at] = vec4<f32>(sm[s], sm[s + 1u], sm[s + 2u], sm[s + 3u]) / l;
        att[at + 1u] = vec4<f32>(sm[s + 4u], sm[s + 5u], sm[s + 6u], sm[s + 7u]) / l;
    }
    workgroupBarrier();
}

@compute @workgroup_size(INVOCATIONS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) g: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let h = wg.x;
    let r0 = wg.y * BM;
    let rows_here = min(BM, st.rows - r0);
    let kvd4 = st.n_head_kv * HD4;
    let kh = h / (st.n_head / st.n_head_kv) * HD4;
    // Positions the workgroup's rows see, and the last one lane's row sees.
    let n = st.pos + r0 + rows_here;
    let row = lane % 16u;
    let last = st.pos + r0 + 16u * g + row;
    let half = 16u * (lane / 16u);
    for (var e = lid; e < BM * HD4; e += INVOCATIONS) {
        let r = e / HD4;
        var v = vec4<f32>(0.0);
        if (r < rows_here) {
            v = q[((r0 + r) * st.n_head + h) * HD4 + e % HD4] * st.scale;
            guard4(v);
        }
        kv[r * HP4 + e % HD4] = vec4<f16>(v);
    }
    workgroupBarrier();
    GEN_Q
    // First pass: each row's largest score.
    var mx = -3.0e38;
    for (var t0 = 0u; t0 < n; t0 += T) {
        let keys = load_rows(t0, n, kvd4, kh, lid, false);
        workgroupBarrier(); // the previous chunk's rows read
        store_rows(keys, 0u, lid);
        workgroupBarrier();
        GEN_SCORES
        workgroupBarrier();
        for (var j = 0u; j < 16u; j++) {
            let t = half + j;
            if (t0 + t <= last) {
                mx = max(mx, sm[16u * T * g + 16u * t + row]);
            }
        }
    }
    mx = max(mx, subgroupShuffleXor(mx, 16u));
    // Second pass: p, its sum and P V.
    GEN_O
    var l = 0.0;
    for (var t0 = 0u; t0 < n; t0 += T) {
        let keys = load_rows(t0, n, kvd4, kh, lid, false);
        let values = load_rows(t0, n, kvd4, kh, lid, true);
        workgroupBarrier();
        store_rows(keys, 0u, lid);
        store_rows(values, T, lid);
        workgroupBarrier();
        GEN_SCORES
        workgroupBarrier();
        for (var j = 0u; j < 16u; j++) {
            let t = half + j;
            var e = 0.0h;
            if (t0 + t <= last) {
                e = f16(exp(sm[16u * T * g + 16u * t + row] - mx));
            }
            l += f32(e);
            pm[16u * PP * g + PP * row + t] = e;
        }
        workgroupBarrier();
        GEN_PV
    }
    l += subgroupShuffleXor(l, 16u);
    workgroupBarrier();
    GEN_OUT
}
