// Y (batch, rows) = X (batch, cols) . W^T for one row chunk of a planar weight: the prefill
// GEMM. A workgroup of 16 x 16 invocations computes a 64-row x 64-column tile, each
// invocation 4 rows (ty + 16 i) x 4 batch columns (tx + 16 j): per 4 values of k it loads 4
// weight and 4 input vec4s from workgroup memory for 16 dot products (64 multiply-adds). The
// K loop walks 32-value slices: each slice of the tile's 64 rows is decoded once into
// workgroup memory (shared by 64 batch columns), the x slice loaded beside it, both stored
// k-part-major ([part][row]) so the 16 invocations of a row read 16 consecutive vec4s. The
// host appends gemm_store.wgsl (`store_tile`), codecs.wgsl (helpers) and slices.wgsl with
// `fn slice_vals(r, s, part) -> vec4<f32>` (values 4 part .. 4 part + 3 of slice s of row r).

// Bindings and `Params`: weights_io.wgsl (prepended by the host); `x2` is unused here.

const TILE: u32 = 64u;
var<workgroup> wt: array<vec4<f32>, 512>; // [part][row]: 8 x 64
var<workgroup> xt: array<vec4<f32>, 512>; // [part][batch column]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row0 = wg.x * TILE;
    let col0 = wg.y * TILE;
    // Loads: invocation lid fills (tile row / batch column lid / 8 and + 32, k-part lid % 8).
    let part = lid % 8u;
    let lr = lid / 8u;
    let last_row = p.rows - 1u;
    let lrow0 = min(row0 + lr, last_row);
    let lrow1 = min(row0 + lr + 32u, last_row);
    let lb0 = col0 + lr;
    let lb1 = col0 + lr + 32u;
    let xb0 = min(lb0, p.batch - 1u) * p.x_stride + part;
    let xb1 = min(lb1, p.batch - 1u) * p.x_stride + part;
    let xw0 = select(0.0, 1.0, lb0 < p.batch);
    let xw1 = select(0.0, 1.0, lb1 < p.batch);
    let slices = p.x_stride / 8u;
    let tx = li.x;
    let ty = li.y;
    var acc0 = vec4<f32>(0.0); // row ty: batch columns tx, tx + 16, tx + 32, tx + 48
    var acc1 = vec4<f32>(0.0); // row ty + 16
    var acc2 = vec4<f32>(0.0); // row ty + 32
    var acc3 = vec4<f32>(0.0); // row ty + 48
    for (var s = 0u; s < slices; s++) {
        wt[part * TILE + lr] = slice_vals(lrow0, s, part);
        wt[part * TILE + lr + 32u] = slice_vals(lrow1, s, part);
        xt[part * TILE + lr] = xw0 * x[xb0 + s * 8u];
        xt[part * TILE + lr + 32u] = xw1 * x[xb1 + s * 8u];
        workgroupBarrier();
        for (var k = 0u; k < 8u; k++) {
            let wb = k * TILE + ty;
            let xb = k * TILE + tx;
            let w0 = wt[wb];
            let w1 = wt[wb + 16u];
            let w2 = wt[wb + 32u];
            let w3 = wt[wb + 48u];
            let x0 = xt[xb];
            let x1 = xt[xb + 16u];
            let x2 = xt[xb + 32u];
            let x3 = xt[xb + 48u];
            acc0 += vec4<f32>(dot(w0, x0), dot(w0, x1), dot(w0, x2), dot(w0, x3));
            acc1 += vec4<f32>(dot(w1, x0), dot(w1, x1), dot(w1, x2), dot(w1, x3));
            acc2 += vec4<f32>(dot(w2, x0), dot(w2, x1), dot(w2, x2), dot(w2, x3));
            acc3 += vec4<f32>(dot(w3, x0), dot(w3, x1), dot(w3, x2), dot(w3, x3));
        }
        workgroupBarrier();
    }
    store_tile(row0 + ty, col0 + tx, acc0, acc1, acc2, acc3);
}
