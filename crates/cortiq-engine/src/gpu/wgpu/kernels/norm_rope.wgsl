// Gemma 3's q and k heads RMS-normed, rotated and the K / V rows appended, one dispatch:
// workgroup h of rows x (n_head + n_head_kv) takes head j = h % (n_head + n_head_kv) of row
// r = h / (n_head + n_head_kv) (a q head, then the k heads), at position `pos + r`: its
// head_dim values divided by their rms (eps: st.eps) and multiplied by the q or k norm's
// weights, then RoPE (`rotated`, rope_head.wgsl: rope_store.wgsl's arithmetic); a q head is
// written back in place, a k head into the mirror's row with the matching v head beside it.
// head_dim % 4 == 0, head_dim <= 256. The host prepends step.wgsl and rope_head.wgsl and
// appends the workgroup sum (reduce_subgroup.wgsl or reduce_shared.wgsl: `reduce`, over
// `partial` and WG).

@group(0) @binding(0) var<storage, read_write> q: array<vec4<f32>>;  // (rows, n_head * head_dim / 4)
@group(0) @binding(1) var<storage, read> k: array<vec4<f32>>;        // (rows, kv_dim / 4)
@group(0) @binding(2) var<storage, read> v: array<vec4<f32>>;        // (rows, kv_dim / 4)
@group(0) @binding(3) var<storage, read_write> kc: array<vec4<f32>>; // (capacity, kv_dim / 4)
@group(0) @binding(4) var<storage, read_write> vc: array<vec4<f32>>; // (capacity, kv_dim / 4)
@group(0) @binding(5) var<storage, read> qw: array<vec4<f32>>;       // (head_dim / 4) q norm weights
@group(0) @binding(6) var<storage, read> kw: array<vec4<f32>>;       // (head_dim / 4) k norm weights
@group(0) @binding(7) var<uniform> st: Step;

const WG: u32 = 64u;
var<workgroup> partial: array<vec4<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let heads = st.n_head + st.n_head_kv;
    let r = wg.x / heads;
    let j = wg.x % heads;
    let is_q = j < st.n_head;
    let n4 = st.head_dim / 4u;
    let kv4 = st.n_head_kv * n4;
    let pos = st.pos + r;
    var at = r * kv4 + (j - st.n_head) * n4 + lid;
    if (is_q) {
        at = (r * st.n_head + j) * n4 + lid;
    }
    var h = vec4<f32>(0.0);
    if (lid < n4) {
        if (is_q) {
            h = q[at];
        } else {
            h = k[at];
        }
    }
    let scale = inverseSqrt(reduce(vec4<f32>(dot(h, h), 0.0, 0.0, 0.0), lid REDUCE_PASS).x / f32(st.head_dim) + st.eps);
    if (lid < n4) {
        rope_in[lid] = h * scale * select(kw[lid], qw[lid], is_q);
    }
    workgroupBarrier();
    if (lid < n4) {
        let y = rotated(lid, pos);
        if (is_q) {
            q[at] = y;
        } else {
            let row = pos * kv4 + (j - st.n_head) * n4 + lid;
            kc[row] = y;
            vc[row] = v[at];
        }
    }
}
