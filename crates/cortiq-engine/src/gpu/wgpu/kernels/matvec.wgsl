// y (batch, rows) = x (batch, cols) . W^T for one row chunk of a planar weight (planar.rs).
// Variants (host-generated): x taken as is, RMS-normed on load (x / rms(x) * x2: the
// workgroup computes rms(x) first), or as silu(x) * x2 (the gated FFN's hidden state); y
// stored, or added to what y holds (a residual add).
// One workgroup of WG_SIZE invocations per (ROWS_PER_WG rows, batch element): invocations
// stride over the units, UNROLL units per iteration (loads first: more bytes in flight); each loads a unit's x once into registers and applies it to every
// row of the workgroup (x traffic per weight byte falls with the row count), then the sums
// are reduced four rows at a time. The host fills in the sizes and the generated lines
// (ROW_INDICES, ACCUMULATORS, UNITS, STORES: values and constant indices only, so
// the unit's x and the accumulators stay in registers), prepends `const UNIT_VEC4` (x vec4s per unit) and
// appends `fn unit_dot(n, r, xs, xsum)` (codecs.wgsl) and the reduction
// (reduce_shared.wgsl or reduce_subgroup.wgsl, which define REDUCE_ARGS/REDUCE_PASS).

// Bindings and `Params`: weights_io.wgsl (prepended by the host).

const WG: u32 = WG_SIZEu;
const ROWS: u32 = ROWS_PER_WGu;
var<workgroup> partial: array<vec4<f32>, WG_SIZE>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let r0 = (wg.y * p.grid_x + wg.x) * ROWS;
    if (r0 >= p.rows) {
        return;
    }
    // Rows past the end repeat the last row; their sums are not written.
    let last = p.rows - 1u;
    let xrow = wg.z * p.x_stride;
    let yrow = p.y_base + wg.z * p.y_stride + p.y_off;
    PROLOGUE
    ROW_INDICES
    ACCUMULATORS
    for (var u0 = lid; u0 < p.units; u0 += WG * UNROLL) {
        UNITS
    }
    STORES
}
