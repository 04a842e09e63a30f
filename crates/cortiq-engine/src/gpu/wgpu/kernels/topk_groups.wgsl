// part (groups, k): workgroup g's k largest keys among logits g * WG * PER .. (topk_keys.wgsl),
// descending, (0, 0) past its finite values. Each invocation holds PER keys; the k-th largest
// of the invocations' largest keys (k distinct keys at or above it) bounds the workgroup's
// k-th largest from below. Only the k invocations whose largest key is at or above it can
// hold a key at or above it, so at most k * PER keys are gathered (all of them, at most
// (k - 1) * PER, when fewer than k invocations hold a finite value).

@group(0) @binding(0) var<storage, read> logits: array<f32>;         // (n)
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>; // (groups, k) part
@group(0) @binding(2) var<uniform> tp: TopKParams;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var keys: array<vec2<u32>, PER>;
    var m = vec2<u32>(0u, 0u);
    for (var j = 0u; j < PER; j++) {
        let i = (wg.x * PER + j) * WG + lid;
        keys[j] = select(vec2<u32>(0u, 0u), order_key(logits[min(i, tp.n - 1u)], i), i < tp.n);
        m = larger(m, keys[j]);
    }
    candidates[lid] = m;
    if (lid == 0u) {
        bound = vec2<u32>(0u, 0u);
        atomicStore(&count, 0u);
    }
    workgroupBarrier();
    offer_bound(m, WG);
    workgroupBarrier();
    let least = bound;
    for (var j = 0u; j < PER; j++) {
        if (is_key(keys[j]) && !above(least, keys[j])) {
            gathered[atomicAdd(&count, 1u)] = keys[j];
        }
    }
    workgroupBarrier();
    let len = atomicLoad(&count);
    let base = wg.x * tp.k;
    for (var i = lid; i < len; i += WG) {
        let key = gathered[i];
        let rank = gathered_rank(key, len);
        if (rank < tp.k) {
            out[base + rank] = key;
        }
    }
    for (var r = len + lid; r < tp.k; r += WG) {
        out[base + r] = vec2<u32>(0u, 0u);
    }
}
