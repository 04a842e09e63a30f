// The graphs' norm step, one workgroup per row: row `row0 + i` of x for workgroup i; if
// `add` is set, x += r first (the residual add fused into the next norm); then row i of out
// = x / rms(x) * w. The host appends reduce_shared.wgsl (`reduce`, over `partial` and `WG`).

struct NormParams {
    n: u32,
    add: u32,
    eps: f32,
    row0: u32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;   // (rows, n) residual stream
@group(0) @binding(1) var<storage, read> r: array<f32>;         // (rows, n) residual to add
@group(0) @binding(2) var<storage, read> w: array<f32>;         // (n) norm weights
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // (workgroups, n)
@group(0) @binding(4) var<uniform> np: NormParams;

const WG: u32 = 256u;
var<workgroup> partial: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let src = (np.row0 + wg.x) * np.n;
    let dst = wg.x * np.n;
    var s = 0.0;
    for (var i = lid; i < np.n; i += WG) {
        var v = x[src + i];
        if (np.add != 0u) {
            v += r[src + i];
            x[src + i] = v;
        }
        s += v * v;
    }
    let scale = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid).x / f32(np.n) + np.eps);
    for (var i = lid; i < np.n; i += WG) {
        out[dst + i] = x[src + i] * scale * w[i];
    }
}
