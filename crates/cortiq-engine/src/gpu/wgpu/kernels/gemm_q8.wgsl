// Y (batch, rows) = X (batch, cols) . W^T for one row chunk of a planar weight with X
// quantized to int8 per 32 values by the CPU path's rule (quant.wgsl): the prefill GEMM with
// int8 activations. A workgroup of 16 x 16 invocations computes a 64-row x 64-column tile,
// each invocation rows ty + 16 i and batch columns tx + 16 j (i, j < 4). The K loop walks
// stages of STAGE_UNITS 32-value units (the host prepends the constant: 2 where they fit the
// adapter's workgroup memory, `gemm_stage_units`): each unit of the tile's 64 rows is loaded once
// into workgroup memory as 32 int8 values (Q4 nibbles as bytes 0..15) and its scales, the 64
// columns' int8 units beside it; the next stage's words are loaded into registers while the
// current one is summed. A (row, column) pair costs 8 packed 4 x 8-bit dot products and one
// scaled add per unit (`gemm_combine`, the CPU's per-unit formula). The host appends
// gemm_store.wgsl (`store_tile`), codecs.wgsl and codecs_q8.wgsl with `gemm_words(r, s,
// half)`, `gemm_scale(r, s)` and `gemm_combine`.

// Bindings and `Params`: weights_io.wgsl (prepended by the host, x as vec4<u32>): x holds
// the int8 units (batch, units, 2 vec4s), x2 their (d, d * sum, sum, 0) (batch, units).

const TILE: u32 = 64u;
var<workgroup> wt: array<vec4<u32>, 128u * STAGE_UNITS>;  // [unit][row][half]: values 0..15, 16..31
var<workgroup> wsc: array<vec2<f32>, 64u * STAGE_UNITS>;  // [unit][row] the unit's weight scales
var<workgroup> xt: array<vec4<u32>, 128u * STAGE_UNITS>;  // [unit][batch column][half]
var<workgroup> xsc: array<vec4<f32>, 64u * STAGE_UNITS>;  // [unit][batch column] (d, d * sum, sum, 0)

// 32 int8 values (two halves of four words) . 32 int8 values.
fn idot32(wa: vec4<u32>, wb: vec4<u32>, xa: vec4<u32>, xb: vec4<u32>) -> i32 {
    return dot4I8Packed(wa.x, xa.x) + dot4I8Packed(wa.y, xa.y) + dot4I8Packed(wa.z, xa.z) + dot4I8Packed(wa.w, xa.w)
         + dot4I8Packed(wb.x, xb.x) + dot4I8Packed(wb.y, xb.y) + dot4I8Packed(wb.z, xb.z) + dot4I8Packed(wb.w, xb.w);
}

// Four batch columns' int8 units (halves a, b) and scales, held in registers.
struct Cols {
    a0: vec4<u32>, b0: vec4<u32>,
    a1: vec4<u32>, b1: vec4<u32>,
    a2: vec4<u32>, b2: vec4<u32>,
    a3: vec4<u32>, b3: vec4<u32>,
    d0: vec4<f32>, d1: vec4<f32>, d2: vec4<f32>, d3: vec4<f32>,
}

// Tile row r's unit u (of the stage) against the four columns.
fn row_dots(u: u32, r: u32, c: Cols) -> vec4<f32> {
    let wa = wt[128u * u + 2u * r];
    let wb = wt[128u * u + 2u * r + 1u];
    let sw = wsc[64u * u + r];
    return vec4<f32>(
        gemm_combine(idot32(wa, wb, c.a0, c.b0), sw, c.d0),
        gemm_combine(idot32(wa, wb, c.a1, c.b1), sw, c.d1),
        gemm_combine(idot32(wa, wb, c.a2, c.b2), sw, c.d2),
        gemm_combine(idot32(wa, wb, c.a3, c.b3), sw, c.d3),
    );
}

// One invocation's share of a stage: words e = lid + 256 k (k < STAGE_UNITS / 2, or the
// first 128 invocations' one word when a stage is one unit) of the weight and activation
// tiles, and scale slot lid (if lid < 64 STAGE_UNITS). Word e is tile row / column e / (2
// STAGE_UNITS), unit (e / 2) % STAGE_UNITS, half e % 2.
const WORDS: u32 = (STAGE_UNITS + 1u) / 2u;
struct Stage {
    w: array<vec4<u32>, WORDS>,
    x: array<vec4<u32>, WORDS>,
    ws: vec2<f32>,
    xs: vec4<f32>,
}

// Stage s0's share of invocation lid, read from the weight and x (rows and columns past the
// end repeat the last one, units past the end the last unit; neither is summed).
fn load_stage(row0: u32, col0: u32, s0: u32, lid: u32) -> Stage {
    var st: Stage;
    let last_row = p.rows - 1u;
    let last_col = p.batch - 1u;
    let last_unit = p.units - 1u;
    for (var k = 0u; k < WORDS; k++) {
        let e = lid + 256u * k;
        if (e < 128u * STAGE_UNITS) {
            let t = e / (2u * STAGE_UNITS);
            let s = min(s0 + (e / 2u) % STAGE_UNITS, last_unit);
            st.w[k] = gemm_words(min(row0 + t, last_row), s, e % 2u);
            st.x[k] = x[2u * (min(col0 + t, last_col) * p.units + s) + e % 2u];
        }
    }
    if (lid < 64u * STAGE_UNITS) {
        let t = lid / STAGE_UNITS;
        let s = min(s0 + lid % STAGE_UNITS, last_unit);
        st.ws = gemm_scale(min(row0 + t, last_row), s);
        st.xs = x2[min(col0 + t, last_col) * p.units + s];
    }
    return st;
}

// Invocation lid's share of a stage into the workgroup tiles.
fn store_stage(st: Stage, lid: u32) {
    for (var k = 0u; k < WORDS; k++) {
        let e = lid + 256u * k;
        if (e < 128u * STAGE_UNITS) {
            let slot = 128u * ((e / 2u) % STAGE_UNITS) + 2u * (e / (2u * STAGE_UNITS)) + e % 2u;
            wt[slot] = st.w[k];
            xt[slot] = st.x[k];
        }
    }
    if (lid < 64u * STAGE_UNITS) {
        let slot = 64u * (lid % STAGE_UNITS) + lid / STAGE_UNITS;
        wsc[slot] = st.ws;
        xsc[slot] = st.xs;
    }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row0 = wg.x * TILE;
    let col0 = wg.y * TILE;
    let tx = li.x;
    let ty = li.y;
    var acc0 = vec4<f32>(0.0); // row ty: batch columns tx, tx + 16, tx + 32, tx + 48
    var acc1 = vec4<f32>(0.0); // row ty + 16
    var acc2 = vec4<f32>(0.0); // row ty + 32
    var acc3 = vec4<f32>(0.0); // row ty + 48
    var st = load_stage(row0, col0, 0u, lid);
    for (var s0 = 0u; s0 < p.units; s0 += STAGE_UNITS) {
        store_stage(st, lid);
        workgroupBarrier();
        if (s0 + STAGE_UNITS < p.units) {
            st = load_stage(row0, col0, s0 + STAGE_UNITS, lid);
        }
        for (var u = 0u; u < min(STAGE_UNITS, p.units - s0); u++) {
            // The invocation's four columns once, then each of its four rows against them.
            let c = 128u * u + 2u * tx;
            let d = 64u * u + tx;
            let cols = Cols(xt[c], xt[c + 1u], xt[c + 32u], xt[c + 33u], xt[c + 64u], xt[c + 65u], xt[c + 96u], xt[c + 97u], xsc[d], xsc[d + 16u], xsc[d + 32u], xsc[d + 48u]);
            acc0 += row_dots(u, ty, cols);
            acc1 += row_dots(u, ty + 16u, cols);
            acc2 += row_dots(u, ty + 32u, cols);
            acc3 += row_dots(u, ty + 48u, cols);
        }
        workgroupBarrier();
    }
    store_tile(row0 + ty, col0 + tx, acc0, acc1, acc2, acc3);
}
