// The top-k merge's workgroup maximum (its bound, its fallback rounds) through shared
// memory: the portable path.
// REDUCE_ARGS=
// REDUCE_PASS=
var<workgroup> red: array<vec2<u32>, 256>;

// The largest of every invocation's m, to every invocation.
fn workgroup_largest(m: vec2<u32>, lid: u32) -> vec2<u32> {
    red[lid] = m;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] = larger(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let top = red[0];
    workgroupBarrier();
    return top;
}
