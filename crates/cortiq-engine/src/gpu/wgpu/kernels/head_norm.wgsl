// Per-head RMSNorm in place (Gemma 3's q and k norms, before RoPE): workgroup h takes head h
// of v (a prompt chunk's rows one after another: row r's head j is head r * heads + j), its
// head_dim values divided by their rms and multiplied by the weights w (head_dim, the same
// for every head). head_dim % 4 == 0, head_dim <= 256. The host appends the
// workgroup sum (reduce_subgroup.wgsl or reduce_shared.wgsl: `reduce`, over `partial` and WG).

@group(0) @binding(0) var<storage, read_write> v: array<vec4<f32>>; // (rows x heads, head_dim / 4)
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;       // (head_dim / 4) norm weights
@group(0) @binding(2) var<uniform> np: NormParams;                  // n = head_dim

const WG: u32 = 64u;
var<workgroup> partial: array<vec4<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let n4 = np.n / 4u;
    let at = wg.x * n4 + lid;
    var h = vec4<f32>(0.0);
    if (lid < n4) {
        h = v[at];
    }
    let scale = inverseSqrt(reduce(vec4<f32>(dot(h, h), 0.0, 0.0, 0.0), lid REDUCE_PASS).x / f32(np.n) + np.eps);
    if (lid < n4) {
        v[at] = h * scale * w[lid];
    }
}
