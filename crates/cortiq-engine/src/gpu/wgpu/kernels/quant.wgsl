// Activation rows quantized to int8 per 32-value unit by the CPU path's rule
// (quant_unit.wgsl) for the int8-activation matvecs (`XMode::Int8`): v = x (mode 0),
// silu(x) * x2 (mode 1: the gated FFN's hidden state) or x / rms(x) * x2 (mode 2: RMSNorm, x2
// the weights; every workgroup sums the row's squares itself). A value that is not finite
// makes its unit's d NaN, so it reaches the output. One invocation per unit; workgroup row y
// takes row y of a batch (x, x2 in mode 1, xq and xd offset by whole rows). The host
// appends quant_unit.wgsl (`store_unit`, the rule itself) and reduce_shared.wgsl (`reduce`,
// over `partial` and `WG`).

struct QuantParams {
    cols: u32,
    mode: u32,
    eps: f32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;       // (rows, cols / 4)
@group(0) @binding(1) var<storage, read> x2: array<vec4<f32>>;      // (rows, cols / 4) up, (cols / 4) norm weights, or x itself (mode 0)
@group(0) @binding(2) var<storage, read_write> xq: array<vec4<u32>>; // (rows, units, 2) the int8 values, 4 a word
@group(0) @binding(3) var<storage, read_write> xd: array<vec4<f32>>; // (rows, units) d, d * sum, sum, 0
@group(0) @binding(4) var<uniform> qp: QuantParams;

const WG: u32 = 256u;
var<workgroup> partial: array<vec4<f32>, 256>;

// vec4 i of the row that starts at vec4 `row` of x (and of x2 in mode 1).
fn val(row: u32, i: u32, scale: f32) -> vec4<f32> {
    let a = x[row + i];
    switch qp.mode {
        case 1u: {
            return a / (1.0 + exp(-a)) * x2[row + i];
        }
        case 2u: {
            return a * scale * x2[i];
        }
        default: {
            return a;
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // Row wg.y of a batch (one row in the token graph): its vec4s and units start here.
    let row = wg.y * (qp.cols / 4u);
    let units = qp.cols / 32u;
    var scale = 1.0;
    if (qp.mode == 2u) {
        var s = 0.0;
        for (var i = lid; i < qp.cols / 4u; i += WG) {
            let v = x[row + i];
            s += dot(v, v);
        }
        scale = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid).x / f32(qp.cols) + qp.eps);
    }
    let u = wg.x * WG + lid;
    if (u >= units) {
        return;
    }
    let v0 = val(row, 8u * u, scale);
    let v1 = val(row, 8u * u + 1u, scale);
    let v2 = val(row, 8u * u + 2u, scale);
    let v3 = val(row, 8u * u + 3u, scale);
    let v4 = val(row, 8u * u + 4u, scale);
    let v5 = val(row, 8u * u + 5u, scale);
    let v6 = val(row, 8u * u + 6u, scale);
    let v7 = val(row, 8u * u + 7u, scale);
    store_unit(wg.y * units + u, v0, v1, v2, v3, v4, v5, v6, v7);
}
