// Y (batch, rows) = X (batch, cols) . W^T for one row chunk of a planar weight, X as int8
// units (quant.wgsl, the CPU path's rule), on the adapter's matrix units (cooperative
// matrices: 16 x 16 x 16, f16 inputs, f32 sums; tensor cores on NVIDIA). A workgroup of
// SG_M x SG_N subgroups of 32 invocations computes a TM x TN tile (TM = 32 SG_M weight rows,
// TN = 32 SG_N batch columns); subgroup g takes the block of FM x FN 16 x 16 sums at rows
// 16 FM (g % SG_M), columns 16 FN (g / SG_M), each sum its own variable c<i><j> (the host
// writes their lines; held in an array of matrices they went to local memory: 2.4x slower
// on the H200). The K loop walks stages of
// STAGE_UNITS 32-value units; each unit of the tile's rows and columns is decoded once into
// workgroup memory as f16 values, four to a vec4 store (weights d * level (+ m), activations
// d * q: the values the int8 kernels' per-unit formula multiplies out, each rounded to f16
// once), the next stage's words loaded into registers while the current one is multiplied.
// With BUFFERS = 2 the tiles are double: the next stage's values are stored into the other
// pair while this one's are multiplied, one barrier a stage (BUFFERS = 1: two). With
// AHEAD = 2 the words of the stage after the next are loaded while this one is multiplied.
// Both sides' values must lie within f16's range (as in the CUDA path's f16 GEMMs). The host
// prepends the `enable` directives, `STAGE_UNITS`, `BUFFERS`, `AHEAD`, `SG_M`, `SG_N`, `FM`, `FN` and `ABLATE`
// (profiling, outputs wrong: 1 stores the stage's words undecoded, 2 leaves out the
// products, 3 the global loads after the first stage's, 4 the stage loop's barriers), and
// appends
// codecs.wgsl, codecs_q8.wgsl and codecs_coop.wgsl with `gemm_words(r, s, half)`,
// `gemm_scale(r, s)` and `coop_weights(levels, scale)`.

// Bindings and `Params`: weights_io.wgsl (prepended by the host, x as vec4<u32>): x holds
// the int8 units (batch, units, 2 vec4s), x2 their (d, d * sum, sum, 0) (batch, units).

const TM: u32 = 16u * FM * SG_M;
const TN: u32 = 16u * FN * SG_N;
const INVOCATIONS: u32 = 32u * SG_M * SG_N;
// f16 values a tile row of one unit takes: its 32 and 8 of padding, so that the eight
// 16-byte row pieces a matrix load reads at once fall on distinct banks; in vec4s.
const KP: u32 = 40u;
const KP4: u32 = KP / 4u;
// Load items (one half unit of one tile row or column) a stage has, and per invocation.
const W_ITEMS: u32 = 2u * TM * STAGE_UNITS;
const X_ITEMS: u32 = 2u * TN * STAGE_UNITS;
const W_PER: u32 = (W_ITEMS + INVOCATIONS - 1u) / INVOCATIONS;
const X_PER: u32 = (X_ITEMS + INVOCATIONS - 1u) / INVOCATIONS;

var<workgroup> wt: array<vec4<f16>, BUFFERS * TM * KP4 * STAGE_UNITS>;  // [buffer][unit][tile row][k] weights
var<workgroup> xt: array<vec4<f16>, BUFFERS * TN * KP4 * STAGE_UNITS>;  // [buffer][unit][batch column][k] activations
var<workgroup> ct: array<f32, 256u * SG_M * SG_N>;             // [subgroup][batch column][row] one 16 x 16 sum

// One invocation's share of a stage, as loaded: items lid + INVOCATIONS i of each side.
// Item e is tile row (column) e / (2 STAGE_UNITS), unit (e / 2) % STAGE_UNITS, half e % 2.
struct Stage {
    w: array<vec4<u32>, W_PER>,
    ws: array<vec2<f32>, W_PER>,
    x: array<vec4<u32>, X_PER>,
    xd: array<f32, X_PER>,
}

// Stage s0's share of invocation lid (rows and columns past the end repeat the last one,
// units past the end the last unit; none of them is summed into a stored value).
fn load_stage(row0: u32, col0: u32, s0: u32, lid: u32) -> Stage {
    var st: Stage;
    for (var i = 0u; i < W_PER; i++) {
        let e = lid + INVOCATIONS * i;
        if (e < W_ITEMS) {
            let r = min(row0 + e / (2u * STAGE_UNITS), p.rows - 1u);
            let s = min(s0 + (e / 2u) % STAGE_UNITS, p.units - 1u);
            st.w[i] = gemm_words(r, s, e % 2u);
            st.ws[i] = gemm_scale(r, s);
        }
    }
    for (var i = 0u; i < X_PER; i++) {
        let e = lid + INVOCATIONS * i;
        if (e < X_ITEMS) {
            let c = min(col0 + e / (2u * STAGE_UNITS), p.batch - 1u);
            let s = min(s0 + (e / 2u) % STAGE_UNITS, p.units - 1u);
            st.x[i] = x[2u * (c * p.units + s) + e % 2u];
            st.xd[i] = x2[c * p.units + s].x;
        }
    }
    return st;
}

// Where item e's half row starts in a tile of `rows` rows (vec4 index).
fn tile_at(e: u32, rows: u32) -> u32 {
    return ((e / 2u) % STAGE_UNITS * rows + e / (2u * STAGE_UNITS)) * KP4 + 4u * (e % 2u);
}

// Invocation lid's share of a stage decoded into the workgroup tiles of buffer `b`.
fn store_stage(st: Stage, lid: u32, b: u32) {
    for (var i = 0u; i < W_PER; i++) {
        let e = lid + INVOCATIONS * i;
        if (e < W_ITEMS) {
            let at = TM * KP4 * STAGE_UNITS * b + tile_at(e, TM);
            for (var j = 0u; j < 4u; j++) {
                if (ABLATE == 1u) {
                    wt[at + j] = vec4<f16>(vec4<u32>(st.w[i][j]));
                } else {
                    wt[at + j] = vec4<f16>(coop_weights(unpack4xI8(st.w[i][j]), st.ws[i]));
                }
            }
        }
    }
    for (var i = 0u; i < X_PER; i++) {
        let e = lid + INVOCATIONS * i;
        if (e < X_ITEMS) {
            let at = TN * KP4 * STAGE_UNITS * b + tile_at(e, TN);
            for (var j = 0u; j < 4u; j++) {
                if (ABLATE == 1u) {
                    xt[at + j] = vec4<f16>(vec4<u32>(st.x[i][j]));
                } else {
                    xt[at + j] = vec4<f16>(st.xd[i] * vec4<f32>(unpack4xI8(st.x[i][j])));
                }
            }
        }
    }
}

// A 16 x 16 sum of subgroup g into y: rows r0.., batch columns b0.. (those inside the
// matrix), through the subgroup's slot of `ct`; lane l stores column l / 2, rows 8 (l & 1)...
fn emit(c: coop_mat16x16<f32, C>, g: u32, lane: u32, r0: u32, b0: u32) {
    coopStore(c, &ct[256u * g], 16u);
    workgroupBarrier();
    let n = lane >> 1u;
    let m = 8u * (lane & 1u);
    let b = b0 + n;
    if (b < p.batch) {
        let base = p.y_base + p.y_off + b * p.y_stride;
        for (var j = 0u; j < 8u; j++) {
            let r = r0 + m + j;
            if (r < p.rows) {
                y[base + r] = ct[256u * g + 16u * n + m + j];
            }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(INVOCATIONS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) g: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let row0 = wg.x * TM;
    let col0 = wg.y * TN;
    let m0 = 16u * FM * (g % SG_M);
    let n0 = 16u * FN * (g / SG_M);
    GEN_SUMS
    var st = load_stage(row0, col0, 0u, lid);
    // With AHEAD = 2 the stage after `st` (units past the end repeat the last one).
    var ahead = st;
    if (AHEAD == 2u) {
        ahead = load_stage(row0, col0, STAGE_UNITS, lid);
    }
    var b = 0u;
    for (var s0 = 0u; s0 < p.units; s0 += STAGE_UNITS) {
        let more = s0 + STAGE_UNITS < p.units;
        if (BUFFERS == 1u || s0 == 0u) {
            store_stage(st, lid, b);
            if (ABLATE != 4u) {
                workgroupBarrier();
            }
        }
        if (more && ABLATE != 3u && AHEAD == 2u) {
            st = ahead;
            ahead = load_stage(row0, col0, s0 + 2u * STAGE_UNITS, lid);
        } else if (more && ABLATE != 3u) {
            st = load_stage(row0, col0, s0 + STAGE_UNITS, lid);
        }
        let bu = STAGE_UNITS * b;
        for (var u = 0u; u < min(STAGE_UNITS, p.units - s0) && ABLATE != 2u; u++) {
            for (var k = 0u; k < 8u; k += 4u) {
                GEN_PRODUCTS
            }
        }
        // The other buffer's last readers passed the previous stage's barrier.
        if (BUFFERS == 2u && more) {
            store_stage(st, lid, 1u - b);
        }
        b = (b + 1u) % BUFFERS;
        if (ABLATE != 4u) {
            workgroupBarrier();
        }
    }
    GEN_STORES
}
