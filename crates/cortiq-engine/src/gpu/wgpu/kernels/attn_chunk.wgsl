// What the attention kernels share (prepended by the host after step.wgsl): a workgroup takes
// one head's query (`qh`, head_dim / 4 vec4s) against CHUNK positions at a time; positions are
// scored from the K mirror as vec4s, then the chunk's max and sum of exps are reduced in `red`
// over the first CHUNK invocations (a workgroup may have more). The kernel declares `kc` (the
// K mirror, vec4s) and `st`.

const CHUNK: u32 = 64u;
var<workgroup> qh: array<vec4<f32>, 64>;
var<workgroup> sc: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

// Part of q . k over the K row at vec4 index `kr`: its vec4s first, first + step, ... below
// hd4 (unscaled).
fn score_part(kr: u32, hd4: u32, first: u32, step: u32) -> f32 {
    var acc = 0.0;
    for (var d = first; d < hd4; d += step) {
        acc += dot(qh[d], kc[kr + d]);
    }
    return acc;
}

// The largest of the first CHUNK invocations' values (every invocation gets it; call from
// uniform control flow).
fn chunk_max(v: f32, lid: u32) -> f32 {
    if (lid < CHUNK) {
        red[lid] = v;
    }
    workgroupBarrier();
    for (var k = CHUNK / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) {
            red[lid] = max(red[lid], red[lid + k]);
        }
        workgroupBarrier();
    }
    let m = red[0];
    workgroupBarrier();
    return m;
}

// The sum of the first CHUNK invocations' values (as chunk_max).
fn chunk_sum(v: f32, lid: u32) -> f32 {
    if (lid < CHUNK) {
        red[lid] = v;
    }
    workgroupBarrier();
    for (var k = CHUNK / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) {
            red[lid] += red[lid + k];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}
