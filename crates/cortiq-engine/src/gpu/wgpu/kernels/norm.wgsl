// The graphs' norm step, one workgroup per row: row `row0 + i` of x for workgroup i; if
// `add` is set, x += r first (the residual add fused into the next norm); then row i of out
// = x / rms(x) * w. Rows are read as vec4s (n % 4 == 0), so a row's loads are few and all in
// flight at once. The host appends the workgroup sum (reduce_subgroup.wgsl where the adapter
// has subgroups, else reduce_shared.wgsl: `reduce`, over `partial` and `WG`).

@group(0) @binding(0) var<storage, read_write> x: array<vec4<f32>>;   // (rows, n / 4) residual stream
@group(0) @binding(1) var<storage, read> r: array<vec4<f32>>;         // (rows, n / 4) residual to add
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;         // (n / 4) norm weights
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>; // (workgroups, n / 4)
@group(0) @binding(4) var<uniform> np: NormParams;

const WG: u32 = 256u;
var<workgroup> partial: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let n4 = np.n / 4u;
    let src = (np.row0 + wg.x) * n4;
    let dst = wg.x * n4;
    var s = 0.0;
    for (var i = lid; i < n4; i += WG) {
        var v = x[src + i];
        if (np.add != 0u) {
            v += r[src + i];
            x[src + i] = v;
        }
        s += dot(v, v);
    }
    let scale = inverseSqrt(reduce(vec4<f32>(s, 0.0, 0.0, 0.0), lid REDUCE_PASS).x / f32(np.n) + np.eps);
    for (var i = lid; i < n4; i += WG) {
        out[dst + i] = x[src + i] * scale * w[i];
    }
}
