// The token graph's norm step (one workgroup): if `add` is set, x += r first (the residual
// add fused into the next norm); then out = x / rms(x) * w. The host appends
// reduce_shared.wgsl (`reduce`, over `partial` and `WG`).

struct NormParams {
    n: u32,
    add: u32,
    eps: f32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;   // (n) residual stream
@group(0) @binding(1) var<storage, read> r: array<f32>;         // (n) residual to add
@group(0) @binding(2) var<storage, read> w: array<f32>;         // (n) norm weights
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (n)
@group(0) @binding(4) var<uniform> np: NormParams;

const WG: u32 = 256u;
var<workgroup> partial: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i < np.n; i += WG) {
        var v = x[i];
        if (np.add != 0u) {
            v += r[i];
            x[i] = v;
        }
        s += v * v;
    }
    let scale = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid).x / f32(np.n) + np.eps);
    for (var i = lid; i < np.n; i += WG) {
        out[i] = x[i] * scale * w[i];
    }
}
