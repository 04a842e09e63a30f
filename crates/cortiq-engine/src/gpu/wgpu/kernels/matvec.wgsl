// y (batch, rows) = x (batch, cols) . W^T for one row chunk of a planar weight (planar.rs).
// One workgroup of 64 invocations per (4 rows, batch element): invocations stride over the
// units; each loads a unit's x once into registers and applies it to all 4 rows (x traffic
// per weight byte is a quarter of one row per workgroup), then the 4 sums are reduced at
// once. The host prepends `const UNIT_VEC4: u32` (x vec4s per unit), replaces LOAD_X with
// the unit's x loads at constant indices (filling `xs`, defining `xsum`), and appends
// `fn unit_dot(n, r, xs, xsum)` (codecs.wgsl) and the reduction (reduce_shared.wgsl or
// reduce_subgroup.wgsl, which define REDUCE_ARGS/REDUCE_PASS).

struct Params {
    rows: u32,      // rows in this chunk
    units: u32,     // units per row
    a: u32,         // scale regions, in u32 words (planar.rs)
    b: u32,
    c: u32,
    x_stride: u32,  // vec4s per x row
    y_base: u32,    // first float of this matrix's output block
    y_stride: u32,  // floats per output row (the matrix's total rows)
    y_off: u32,     // first row of this chunk
    grid_x: u32,    // workgroups along x
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>; // payload, 1-2 per unit
@group(0) @binding(1) var<storage, read> ws: array<u32>;       // the same buffer, by word
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;  // (batch, cols / 4)
@group(0) @binding(3) var<storage, read_write> y: array<f32>;  // y_base + (batch, y_stride)
@group(0) @binding(4) var<uniform> p: Params;

const WG: u32 = 64u;
const ROWS: u32 = 4u;
var<workgroup> partial: array<vec4<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let r0 = (wg.y * p.grid_x + wg.x) * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    // Rows past the end repeat the last row; their sums are not written.
    let last = p.rows - 1u;
    let r1 = min(r0 + 1u, last);
    let r2 = min(r0 + 2u, last);
    let r3 = min(r0 + 3u, last);
    let xrow = wg.z * p.x_stride;
    var acc = vec4<f32>(0.0);
    for (var u = lid; u < p.units; u += WG) {
        var xs: array<vec4<f32>, 8>;
        let xv = xrow + u * UNIT_VEC4;
        LOAD_X
        let s = dot(xsum, vec4<f32>(1.0));
        acc += vec4<f32>(unit_dot(r0 * p.units + u, r0, &xs, s), unit_dot(r1 * p.units + u, r1, &xs, s),
                         unit_dot(r2 * p.units + u, r2, &xs, s), unit_dot(r3 * p.units + u, r3, &xs, s));
    }
    let total = reduce(acc, lid REDUCE_PASS);
    if (lid < ROWS && r0 + lid < p.rows) {
        y[p.y_base + wg.z * p.y_stride + p.y_off + r0 + lid] = total[lid];
    }
}
