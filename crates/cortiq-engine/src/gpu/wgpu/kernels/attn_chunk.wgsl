// What the attention kernels share (prepended by the host after step.wgsl): a workgroup of
// CHUNK invocations takes one head's query (`qh`) against CHUNK positions at a time; each
// invocation scores one position, then the chunk's max and sum of exps are reduced in `red`.
// The kernel declares `kc` (the K mirror) and `st`.

const CHUNK: u32 = 64u;
var<workgroup> qh: array<f32, 256>;
var<workgroup> sc: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

// The scaled score q . k of the K row at `kr` (head_dim floats).
fn score(kr: u32, hd: u32) -> f32 {
    var acc = 0.0;
    for (var d = 0u; d < hd; d++) {
        acc += qh[d] * kc[kr + d];
    }
    return acc * st.scale;
}

// The largest of the workgroup's values (every invocation gets it; call from uniform
// control flow).
fn chunk_max(v: f32, lid: u32) -> f32 {
    red[lid] = v;
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

// The sum of the workgroup's values (as chunk_max).
fn chunk_sum(v: f32, lid: u32) -> f32 {
    red[lid] = v;
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
