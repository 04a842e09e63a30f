// Workgroup sum of 4 lanes at once through shared memory: the portable path.
// REDUCE_ARGS=
// REDUCE_PASS=
fn reduce(v: vec4<f32>, lid: u32) -> vec4<f32> {
    workgroupBarrier(); // the previous reduction's readers are done with `partial`
    partial[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    return partial[0];
}
