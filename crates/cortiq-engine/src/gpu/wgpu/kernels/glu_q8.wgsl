// The int8 token graph's gate and up matvecs writing down's int8 input (glu.rs): workgroup n
// takes unit n of the hidden state, rows 32 n .. 32 n + 31 of gate and of up, in 32 / R row
// groups of LANES invocations (R rows of both matrices a group); a group's lanes stride over
// x's units; each group's sums are reduced over its lanes in workgroup memory; then
// h = silu(gate) * up of the 32 rows is quantized by the quantizer's rule (quant_unit.wgsl's
// `store_unit`, as quant.wgsl's mode 1 would from the two outputs) into unit n of xq / xd.
// The host prepends the Params block and fills in LANES, R and the generated lines
// (ROW_STARTS, ACCUMULATORS, DOTS, PARTS_OUT, PARTS_ADD, HIDDEN: constant indices only, so
// the accumulators stay in registers), and appends both matrices' codec functions
// (`unit_dot8_m0` for gate, `unit_dot8_m1` for up) and quant_unit.wgsl.

struct Multi {
    p: array<Params, 3>,
    starts: vec4<u32>,
}

@group(0) @binding(0) var<storage, read> wq0: array<vec4<u32>>;       // gate's payload
@group(0) @binding(1) var<storage, read> ws0: array<u32>;             // the same buffer, by word
@group(0) @binding(2) var<storage, read> wq1: array<vec4<u32>>;       // up's payload
@group(0) @binding(3) var<storage, read> ws1: array<u32>;
@group(0) @binding(4) var<storage, read> x: array<vec4<u32>>;         // (units, 2) int8 x, 4 values a word
@group(0) @binding(5) var<storage, read> x2: array<vec4<f32>>;        // (units) d, d * sum, sum, 0
@group(0) @binding(6) var<storage, read_write> xq: array<vec4<u32>>;  // (rows / 32, 2) the hidden state, int8
@group(0) @binding(7) var<storage, read_write> xd: array<vec4<f32>>;  // (rows / 32) its d, d * sum, sum, 0
@group(0) @binding(8) var<uniform> mp: Multi;

const LANES: u32 = LANES_PER_GROUPu;
const R: u32 = ROWS_PER_GROUPu;
// Per invocation R / 2 vec4 sums (gate's R / 4, then up's), slot j of invocation i at j * 256 + i.
var<workgroup> part: array<vec4<f32>, PART_VEC4S>;

fn silu_mul(g: vec4<f32>, u: vec4<f32>) -> vec4<f32> {
    return g / (1.0 + exp(-g)) * u;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let n = wg.y * mp.p[0].grid_x + wg.x;
    if (32u * n >= mp.p[0].rows) {
        return;
    }
    let units = mp.p[0].units;
    let lane = lid % LANES;
    let r0 = 32u * n + R * (lid / LANES);
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
        store_unit(n, HIDDEN);
    }
}
