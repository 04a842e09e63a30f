// RoPE on q (n_head heads, in place) and k (n_head_kv heads) of row y of the grid at
// position `pos + y`, then the rotated k and v appended to this layer's KV mirror at that
// position. One invocation per rotary pair of q and k, plus one per k/v value (dimensions
// past the rotary width are copied); the decode token is row 0.
// `Step`, the per-token block, comes from step.wgsl (prepended by the host).

@group(0) @binding(0) var<storage, read_write> q: array<f32>;  // (rows, n_head * head_dim)
@group(0) @binding(1) var<storage, read> k: array<f32>;        // (rows, kv_dim)
@group(0) @binding(2) var<storage, read> v: array<f32>;        // (rows, kv_dim)
@group(0) @binding(3) var<storage, read_write> kc: array<f32>; // (capacity, kv_dim)
@group(0) @binding(4) var<storage, read_write> vc: array<f32>; // (capacity, kv_dim)
@group(0) @binding(5) var<uniform> st: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x;
    let half = st.rot / 2u;
    let kvd = st.n_head_kv * st.head_dim;
    let nq = st.n_head * half;
    let nk = st.n_head_kv * half;
    let pos = st.pos + gid.y;
    let qo = gid.y * st.n_head * st.head_dim;
    let ko = gid.y * kvd;
    let row = pos * kvd;
    if (t < nq + nk) {
        let is_q = t < nq;
        let u = select(t - nq, t, is_q);
        let h = u / half;
        let i = u % half;
        let theta = f32(pos) * pow(st.base, -2.0 * f32(i) / f32(st.rot));
        let c = cos(theta);
        let s = sin(theta);
        var a = 2u * i;
        var b = 2u * i + 1u;
        if (st.neox != 0u) {
            a = i;
            b = i + half;
        }
        let base = h * st.head_dim;
        if (is_q) {
            let x0 = q[qo + base + a];
            let x1 = q[qo + base + b];
            q[qo + base + a] = x0 * c - x1 * s;
            q[qo + base + b] = x0 * s + x1 * c;
        } else {
            let x0 = k[ko + base + a];
            let x1 = k[ko + base + b];
            kc[row + base + a] = x0 * c - x1 * s;
            kc[row + base + b] = x0 * s + x1 * c;
        }
    } else if (t < nq + nk + kvd) {
        let i = t - nq - nk;
        vc[row + i] = v[ko + i];
        if (i % st.head_dim >= st.rot) {
            kc[row + i] = k[ko + i];
        }
    }
}
