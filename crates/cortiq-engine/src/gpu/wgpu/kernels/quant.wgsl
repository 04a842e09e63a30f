// Activation rows quantized to int8 per 32-value unit by the CPU path's rule
// (quant_unit.wgsl) for the int8-activation matvecs (`XMode::Int8`): v = x (mode 0),
// silu(x) * x2 (mode 1: the gated FFN's hidden state), x / rms(x) * x2 (mode 2: RMSNorm, x2
// the weights; every workgroup sums the row's squares itself) or x * x2 with each unit's sum
// of squares of x in xd's fourth lane (mode 3: the RMSNorm's scale left to the consumer,
// `XMode::Int8Norm`; d and d * sum kept in f32). A value that is not finite
// makes its unit's d NaN, so it reaches the output. One invocation per unit; workgroup row y
// takes row y of a batch (x, x2 in mode 1, xq and xd offset by whole rows). The host
// appends quant_unit.wgsl (`store_unit`, the rule itself) and the workgroup sum
// (reduce_subgroup.wgsl where the adapter has subgroups, else reduce_shared.wgsl: `reduce`,
// over `partial` and `WG`). For the prompt GEMMs on the matrix units the host writes the f16
// guard (f16_guard.wgsl) in place of GUARD_UNIT, with `bad` at binding 4 and `qp` at 5;
// elsewhere GUARD_UNIT is empty.

struct QuantParams {
    cols: u32,
    mode: u32,
    eps: f32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;       // (rows, cols / 4)
@group(0) @binding(1) var<storage, read> x2: array<vec4<f32>>;      // (rows, cols / 4) up, (cols / 4) norm weights (modes 2, 3), or x itself (mode 0)
@group(0) @binding(2) var<storage, read_write> xq: array<vec4<u32>>; // (rows, units, 2) the int8 values, 4 a word
@group(0) @binding(3) var<storage, read_write> xd: array<vec4<f32>>; // (rows, units) d, d * sum, sum, 0
@group(0) @binding(4) var<uniform> qp: QuantParams;

const WG: u32 = 256u;
var<workgroup> partial: array<vec4<f32>, 256>;

// A vec4 of the value to quantize from x's vec4 `a` and the second input's `b` (mode 1: up;
// mode 2: the norm weights, with the row's RMS scale; mode 3: the norm weights alone).
fn val(a: vec4<f32>, b: vec4<f32>, scale: f32) -> vec4<f32> {
    switch qp.mode {
        case 1u: {
            return a / (1.0 + exp(-a)) * b;
        }
        case 2u: {
            return a * scale * b;
        }
        case 3u: {
            return a * b;
        }
        default: {
            return a;
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    // Row wg.y of a batch (one row in the token graph): its vec4s and units start here.
    let row = wg.y * (qp.cols / 4u);
    let units = qp.cols / 32u;
    let u = wg.x * WG + lid;
    // The unit's x vec4s and second inputs, loaded before anything waits on them (an
    // invocation past the row loads the last unit and writes nothing; x2 holds one row of
    // norm weights in modes 2 and 3, whole rows otherwise).
    let i = row + 8u * min(u, units - 1u);
    let j = select(i, i - row, qp.mode >= 2u);
    let a0 = x[i];
    let a1 = x[i + 1u];
    let a2 = x[i + 2u];
    let a3 = x[i + 3u];
    let a4 = x[i + 4u];
    let a5 = x[i + 5u];
    let a6 = x[i + 6u];
    let a7 = x[i + 7u];
    let b0 = x2[j];
    let b1 = x2[j + 1u];
    let b2 = x2[j + 2u];
    let b3 = x2[j + 3u];
    let b4 = x2[j + 4u];
    let b5 = x2[j + 5u];
    let b6 = x2[j + 6u];
    let b7 = x2[j + 7u];
    var scale = 1.0;
    if (qp.mode == 2u) {
        var s = 0.0;
        if (units <= WG) {
            // One workgroup holds every unit of the row: its squares summed from the units.
            if (u < units) {
                s = dot(a0, a0) + dot(a1, a1) + dot(a2, a2) + dot(a3, a3) + dot(a4, a4) + dot(a5, a5) + dot(a6, a6) + dot(a7, a7);
            }
        } else {
            for (var k = lid; k < qp.cols / 4u; k += WG) {
                let v = x[row + k];
                s += dot(v, v);
            }
        }
        scale = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid REDUCE_PASS).x / f32(qp.cols) + qp.eps);
    }
    if (u >= units) {
        return;
    }
    let squares = select(0.0, dot(a0, a0) + dot(a1, a1) + dot(a2, a2) + dot(a3, a3) + dot(a4, a4) + dot(a5, a5) + dot(a6, a6) + dot(a7, a7), qp.mode == 3u);
    let v0 = val(a0, b0, scale);
    let v1 = val(a1, b1, scale);
    let v2 = val(a2, b2, scale);
    let v3 = val(a3, b3, scale);
    let v4 = val(a4, b4, scale);
    let v5 = val(a5, b5, scale);
    let v6 = val(a6, b6, scale);
    let v7 = val(a7, b7, scale);
    GUARD_UNIT
    store_unit_as(wg.y * units + u, squares, qp.mode != 3u, v0, v1, v2, v3, v4, v5, v6, v7);
}
