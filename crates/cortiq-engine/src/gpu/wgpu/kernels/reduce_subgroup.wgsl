// Workgroup sum of 4 lanes at once with subgroup operations: one subgroupAdd, then the
// subgroups' partials through shared memory.
// REDUCE_ARGS=, @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_id) sg_id: u32, @builtin(num_subgroups) n_sg: u32
// REDUCE_PASS=, sg_lane, sg_id, n_sg
fn reduce(v: vec4<f32>, lid: u32, sg_lane: u32, sg_id: u32, n_sg: u32) -> vec4<f32> {
    workgroupBarrier(); // the previous reduction's readers are done with `partial`
    let s = subgroupAdd(v);
    if (sg_lane == 0u) {
        partial[sg_id] = s;
    }
    workgroupBarrier();
    var t = vec4<f32>(0.0);
    for (var i = 0u; i < n_sg; i++) {
        t += partial[i];
    }
    return t;
}
