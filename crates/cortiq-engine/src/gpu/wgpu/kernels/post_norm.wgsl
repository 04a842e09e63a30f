// Gemma 3's sandwich norm between stages, one workgroup a row (row i for workgroup i): x +=
// t / rms(t) * wp (the attention or FFN output normed before its residual add), then out =
// x / rms(x) * wn (the next stage's input norm). Rows are read as vec4s (n % 4 == 0). The
// host appends the workgroup sum (reduce_subgroup.wgsl or reduce_shared.wgsl: `reduce`, over
// `partial` and WG).

@group(0) @binding(0) var<storage, read_write> x: array<vec4<f32>>;   // (rows, n / 4) residual stream
@group(0) @binding(1) var<storage, read> t: array<vec4<f32>>;         // (rows, n / 4) the stage's output
@group(0) @binding(2) var<storage, read> wp: array<vec4<f32>>;        // (n / 4) its norm's weights
@group(0) @binding(3) var<storage, read> wn: array<vec4<f32>>;        // (n / 4) the next norm's weights
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>; // (rows, n / 4) the next stage's input
@group(0) @binding(5) var<uniform> np: NormParams;

const WG: u32 = 256u;
var<workgroup> partial: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let n4 = np.n / 4u;
    let row = wg.x * n4;
    var s = 0.0;
    for (var i = lid; i < n4; i += WG) {
        let v = t[row + i];
        s += dot(v, v);
    }
    let ts = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid REDUCE_PASS).x / f32(np.n) + np.eps);
    s = 0.0;
    for (var i = lid; i < n4; i += WG) {
        let v = x[row + i] + t[row + i] * ts * wp[i];
        x[row + i] = v;
        s += dot(v, v);
    }
    let xs = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid REDUCE_PASS).x / f32(np.n) + np.eps);
    for (var i = lid; i < n4; i += WG) {
        out[row + i] = x[row + i] * xs * wn[i];
    }
}
