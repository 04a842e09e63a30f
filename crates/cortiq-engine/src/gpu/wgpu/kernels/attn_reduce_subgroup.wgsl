// The attention chunk's max and sum with subgroup operations: each subgroup's by one
// subgroupMax / subgroupAdd, then the subgroups' through shared memory (two barriers where
// the shared-memory halving takes eight).
// REDUCE_ARGS=, @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_id) sg_id: u32, @builtin(num_subgroups) n_sg: u32
// REDUCE_KEEP=sg = vec3<u32>(sg_lane, sg_id, n_sg);
var<private> sg: vec3<u32>; // this invocation's (lane, subgroup, subgroups), kept by the entry point

// The largest (`take_max`) or the sum of the first CHUNK invocations' values (every
// invocation gets it; call from uniform control flow). `red` holds a partial per subgroup
// (subgroups of at least 4 invocations).
fn chunk_reduce(v: f32, lid: u32, take_max: bool) -> f32 {
    var r = 0.0;
    if (take_max) {
        r = subgroupMax(select(-3.0e38, v, lid < CHUNK));
    } else {
        r = subgroupAdd(select(0.0, v, lid < CHUNK));
    }
    if (sg.x == 0u) {
        red[sg.y] = r;
    }
    workgroupBarrier();
    var t = red[0];
    for (var i = 1u; i < sg.z; i++) {
        t = select(t + red[i], max(t, red[i]), take_max);
    }
    workgroupBarrier();
    return t;
}
