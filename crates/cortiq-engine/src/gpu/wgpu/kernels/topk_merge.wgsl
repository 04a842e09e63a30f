// top (k): the k largest keys of part (groups, k) (topk_keys.wgsl), descending, (0, 0) past
// the finite values. One workgroup; the first WG * PER keys held in registers, any beyond
// (more than 64 groups of 64) read from `part` every round.

@group(0) @binding(0) var<storage, read> part: array<vec2<u32>>;      // (groups, k)
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>; // (k) top
@group(0) @binding(2) var<uniform> tp: TopKParams;

fn spilled(i: u32) -> vec2<u32> {
    return part[i];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let total = tp.groups * tp.k;
    var keys: array<vec2<u32>, PER>;
    for (var j = 0u; j < PER; j++) {
        let i = j * WG + lid;
        keys[j] = select(vec2<u32>(0u, 0u), part[min(i, total - 1u)], i < total);
    }
    top_rounds(keys, min(total, WG * PER), total, 0u, lid REDUCE_PASS);
}
