// Y (batch, rows) = X (batch, cols) . W^T for one row chunk of a planar weight with X
// quantized to int8 per 32 values by the CPU path's rule (quant.wgsl): the prefill GEMM with
// int8 activations. A workgroup of 16 x 16 invocations computes a 64-row x 64-column tile,
// each invocation rows ty + 16 i and batch columns tx + 16 j (i, j < 4). The K loop walks
// 32-value units: each unit of the tile's 64 rows is loaded once into workgroup memory as
// 32 int8 values (Q4 nibbles as bytes 0..15) and its scales, the 64 columns' int8 units
// beside it; a (row, column) pair then costs 8 packed 4 x 8-bit dot products and one
// scaled add (`gemm_combine`, the CPU's per-unit formula). The host appends gemm_store.wgsl
// (`store_tile`), codecs.wgsl and codecs_q8.wgsl with `gemm_words(r, s, half)`,
// `gemm_scale(r, s)` and `gemm_combine`.

// Bindings and `Params`: weights_io.wgsl (prepended by the host, x as vec4<u32>): x holds
// the int8 units (batch, units, 2 vec4s), x2 their (d, d * sum, sum, 0) (batch, units).

const TILE: u32 = 64u;
var<workgroup> wt: array<vec4<u32>, 128>;  // [row][half]: values 0..15, 16..31 of the unit
var<workgroup> wsc: array<vec2<f32>, 64>;  // [row] the unit's weight scales
var<workgroup> xt: array<vec4<u32>, 128>;  // [batch column][half]
var<workgroup> xsc: array<vec4<f32>, 64>;  // [batch column] (d, d * sum, sum, 0)

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

// Tile row r's unit against the four columns.
fn row_dots(r: u32, c: Cols) -> vec4<f32> {
    let wa = wt[2u * r];
    let wb = wt[2u * r + 1u];
    let sw = wsc[r];
    return vec4<f32>(
        gemm_combine(idot32(wa, wb, c.a0, c.b0), sw, c.d0),
        gemm_combine(idot32(wa, wb, c.a1, c.b1), sw, c.d1),
        gemm_combine(idot32(wa, wb, c.a2, c.b2), sw, c.d2),
        gemm_combine(idot32(wa, wb, c.a3, c.b3), sw, c.d3),
    );
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row0 = wg.x * TILE;
    let col0 = wg.y * TILE;
    let last_row = p.rows - 1u;
    // Loads: invocation lid < 128 fills half lid % 2 of tile row / batch column lid / 2;
    // lid < 64 also the scales of row / column lid. Rows and columns past the end repeat the
    // last one (not stored).
    let lr = lid / 2u;
    let half = lid % 2u;
    let wrow = min(row0 + lr, last_row);
    let xcol = min(col0 + lr, p.batch - 1u);
    let srow = min(row0 + lid, last_row);
    let scol = min(col0 + lid, p.batch - 1u);
    let tx = li.x;
    let ty = li.y;
    var acc0 = vec4<f32>(0.0); // row ty: batch columns tx, tx + 16, tx + 32, tx + 48
    var acc1 = vec4<f32>(0.0); // row ty + 16
    var acc2 = vec4<f32>(0.0); // row ty + 32
    var acc3 = vec4<f32>(0.0); // row ty + 48
    for (var s = 0u; s < p.units; s++) {
        if (lid < 128u) {
            wt[lid] = gemm_words(wrow, s, half);
            xt[lid] = x[2u * (xcol * p.units + s) + half];
        }
        if (lid < 64u) {
            wsc[lid] = gemm_scale(srow, s);
            xsc[lid] = x2[scol * p.units + s];
        }
        workgroupBarrier();
        // The invocation's four columns once, then each of its four rows against them.
        let cols = Cols(xt[2u * tx], xt[2u * tx + 1u], xt[2u * tx + 32u], xt[2u * tx + 33u], xt[2u * tx + 64u], xt[2u * tx + 65u], xt[2u * tx + 96u], xt[2u * tx + 97u], xsc[tx], xsc[tx + 16u], xsc[tx + 32u], xsc[tx + 48u]);
        acc0 += row_dots(ty, cols);
        acc1 += row_dots(ty + 16u, cols);
        acc2 += row_dots(ty + 32u, cols);
        acc3 += row_dots(ty + 48u, cols);
        workgroupBarrier();
    }
    store_tile(row0 + ty, col0 + tx, acc0, acc1, acc2, acc3);
}
