// Matvecs over int8 x that write the next stage's int8 input themselves (q8_out.rs):
// workgroup n takes rows 32 n .. 32 n + 31 of each of its matrices (one unit of the output),
// in 32 / R row groups of LANES invocations (R rows of every matrix a group); a group's lanes
// stride over x's units; each group's sums are reduced over its lanes in workgroup memory;
// then one invocation makes the unit's 32 values from the sums and quantizes them by
// the quantizer's rule (quant_unit.wgsl) into unit n of xq / xd. What the unit is:
// - gate and up (two matrices): silu(gate) * up, as quant.wgsl's mode 1 would from the two
//   outputs;
// - a residual add (one matrix): the sums added into the residual stream r (rows 32 n ..,
//   written back), and r * w (w: the next RMSNorm's weights) quantized with the unit's sum of
//   squares of r in xd's fourth lane, as quant.wgsl's mode 3 would from r.
// Where x is such a normed row (`XMode::Int8Norm`), the sums are scaled by x's 1 / rms first,
// its sum of squares gathered from its units in the lanes' loop (each group's lanes visit
// every unit, so each group's total is the row's).
// The host prepends the Params block, fills in the bindings, the sizes and the generated
// lines (the capitalized names below; constant indices only, so the accumulators stay in
// registers), and appends the matrices' codec functions (`unit_dot8_m0`, `unit_dot8_m1`) and
// quant_unit.wgsl.

struct Multi {
    p: array<Params, 3>,
    starts: vec4<u32>,
}

BINDINGS

const LANES: u32 = LANES_PER_GROUPu;
const R: u32 = ROWS_PER_GROUPu;
// Per invocation the vec4 sums of its rows (matrix by matrix, R / 4 each), slot j of
// invocation i at j * WG + i; then its sum of x's squares.
var<workgroup> part: array<vec4<f32>, PART_VEC4S>;
var<workgroup> squares: array<f32, WG>;
// The residual add's r and w vec4s of the unit (r at 0 .. 7, w at 8 .. 15), loaded early.
var<workgroup> kept: array<vec4<f32>, 16>;

fn silu_mul(g: vec4<f32>, u: vec4<f32>) -> vec4<f32> {
    return g / (1.0 + exp(-g)) * u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = wg.y * mp.p[0].grid_x + wg.x;
    if (32u * n >= mp.p[0].rows) {
        return;
    }
    let units = mp.p[0].units;
    let lane = lid % LANES;
    let r0 = 32u * n + R * (lid / LANES);
    EARLY
    ROW_STARTS
    ACCUMULATORS
    for (var k = lane; k < units; k += LANES) {
        let xa = x[2u * k];
        let xb = x[2u * k + 1u];
        let xs = x2[k];
        DOTS
    }
    PARTS_OUT
    for (var s = LANES / 2u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lane < s) {
            PARTS_ADD
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        UNIT
    }
}
