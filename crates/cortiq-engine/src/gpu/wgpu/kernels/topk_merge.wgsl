// top (k): the k largest keys of part (groups, k) (topk_keys.wgsl), descending, (0, 0) past
// the finite values. One workgroup.

@group(0) @binding(0) var<storage, read> part: array<vec2<u32>>;      // (groups, k)
@group(0) @binding(1) var<storage, read_write> top: array<vec2<u32>>; // (k)
@group(0) @binding(2) var<uniform> tp: TopKParams;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    let total = tp.groups * tp.k;
    var last = vec2<u32>(0xffffffffu, 0xffffffffu);
    for (var r = 0u; r < tp.k; r++) {
        var m = vec2<u32>(0u, 0u);
        for (var i = lid; i < total; i += WG) {
            let key = part[i];
            if (above(last, key)) {
                m = larger(m, key);
            }
        }
        last = workgroup_largest(m, lid);
        if (lid == 0u) {
            top[r] = last;
        }
    }
}
