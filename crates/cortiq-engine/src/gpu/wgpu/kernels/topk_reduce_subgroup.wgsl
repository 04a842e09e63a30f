// The top-k merge's workgroup maximum (its bound, its fallback rounds) with subgroup
// operations: a subgroup's largest key by two subgroupMax (the value word, then the index word
// among the lanes holding that value), then the subgroups' through shared memory: two
// barriers instead of nine.
// REDUCE_ARGS=, @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_id) sg_id: u32, @builtin(num_subgroups) n_sg: u32
// REDUCE_PASS=, sg_lane, sg_id, n_sg
var<workgroup> red: array<vec2<u32>, 256>;

// The largest of every invocation's m, to every invocation.
fn workgroup_largest(m: vec2<u32>, lid: u32, sg_lane: u32, sg_id: u32, n_sg: u32) -> vec2<u32> {
    let hi = subgroupMax(m.x);
    let lo = subgroupMax(select(0u, m.y, m.x == hi));
    if (sg_lane == 0u) {
        red[sg_id] = vec2<u32>(hi, lo);
    }
    workgroupBarrier();
    var top = red[0];
    for (var i = 1u; i < n_sg; i++) {
        top = larger(top, red[i]);
    }
    workgroupBarrier();
    return top;
}
