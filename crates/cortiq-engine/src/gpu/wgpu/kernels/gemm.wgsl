// Y (batch, rows) = X (batch, cols) . W^T for one row chunk of a planar weight: the prefill
// GEMM. A workgroup of 16 x 16 invocations computes a 32-row x 32-column tile, each
// invocation 2 rows x 2 batch columns; the K loop walks 32-value slices of the rows: the
// weight slice is decoded once into workgroup memory (shared by 32 batch columns) and the
// x slice loaded beside it. The host appends codecs.wgsl (helpers) and slices.wgsl with
// `fn slice_vals(r, s, part) -> vec4<f32>` (values 4 part .. 4 part + 3 of slice s of row r).

// Bindings and `Params`: weights_io.wgsl (prepended by the host); `x2` is unused here.

var<workgroup> wt: array<vec4<f32>, 256>; // [row][part]: 32 rows x 8 vec4s
var<workgroup> xt: array<vec4<f32>, 256>; // [batch][part]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row0 = wg.x * 32u;
    let col0 = wg.y * 32u;
    let lr = lid / 8u;   // the tile row / batch column this invocation loads
    let part = lid % 8u;
    let last_row = p.rows - 1u;
    let lrow = min(row0 + lr, last_row);
    let lb = col0 + lr;
    let slices = p.x_stride / 8u;
    var acc = vec4<f32>(0.0); // (r0 b0, r0 b1, r1 b0, r1 b1)
    for (var s = 0u; s < slices; s++) {
        wt[lid] = slice_vals(lrow, s, part);
        var xv = vec4<f32>(0.0);
        if (lb < p.batch) {
            xv = x[lb * p.x_stride + s * 8u + part];
        }
        xt[lid] = xv;
        workgroupBarrier();
        let r = li.y * 2u;
        let b = li.x * 2u;
        for (var k = 0u; k < 8u; k++) {
            let w0 = wt[r * 8u + k];
            let w1 = wt[(r + 1u) * 8u + k];
            let x0 = xt[b * 8u + k];
            let x1 = xt[(b + 1u) * 8u + k];
            acc += vec4<f32>(dot(w0, x0), dot(w0, x1), dot(w1, x0), dot(w1, x1));
        }
        workgroupBarrier();
    }
    let r = row0 + li.y * 2u;
    let b = col0 + li.x * 2u;
    let base = p.y_base + p.y_off;
    if (r < p.rows && b < p.batch) { y[base + b * p.y_stride + r] = acc.x; }
    if (r < p.rows && b + 1u < p.batch) { y[base + (b + 1u) * p.y_stride + r] = acc.y; }
    if (r + 1u < p.rows && b < p.batch) { y[base + b * p.y_stride + r + 1u] = acc.z; }
    if (r + 1u < p.rows && b + 1u < p.batch) { y[base + (b + 1u) * p.y_stride + r + 1u] = acc.w; }
}
