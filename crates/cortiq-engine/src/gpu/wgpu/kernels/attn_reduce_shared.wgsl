// The attention chunk's max and sum through shared memory: the portable path.
// REDUCE_ARGS=
// REDUCE_KEEP=

// The largest (`take_max`) or the sum of the first CHUNK invocations' values (every
// invocation gets it; call from uniform control flow).
fn chunk_reduce(v: f32, lid: u32, take_max: bool) -> f32 {
    if (lid < CHUNK) {
        red[lid] = v;
    }
    workgroupBarrier();
    for (var k = CHUNK / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) {
            red[lid] = select(red[lid] + red[lid + k], max(red[lid], red[lid + k]), take_max);
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}
