// top (k): the k largest keys of part (groups, k) (topk_keys.wgsl), descending, (0, 0) past
// the finite values; with tp.draw, the next token drawn from them into best[0]
// (topk_draw.wgsl). One workgroup. Every key of the answer is at least `least`, the larger
// of two lower bounds of the k-th largest key: the largest of the groups' k-th keys (that
// group alone holds k keys at or above it) and, up to 256 groups, the k-th largest of the
// groups' leading keys, ceil(k / groups) of each (k distinct keys at or above it). The keys
// at or above it are gathered into workgroup memory and each placed by its rank among them;
// where more than GATHERED pass (as when a few groups hold most of the large values), rounds
// over `part` take the largest key below the last one taken, k times.

@group(0) @binding(0) var<storage, read> part: array<vec2<u32>>;      // (groups, k)
@group(0) @binding(1) var<storage, read_write> out: array<vec2<u32>>; // (k) top
@group(0) @binding(2) var<uniform> tp: TopKParams;
@group(0) @binding(3) var<storage, read_write> best: array<u32>;      // (1) the drawn token
@group(0) @binding(4) var<uniform> dp: DrawParams;

var<workgroup> top: array<vec2<u32>, K_MAX>; // the answer
var<workgroup> gathered_len: u32;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32 REDUCE_ARGS) {
    let total = tp.groups * tp.k;
    let per = (tp.k + tp.groups - 1u) / tp.groups; // each group's leading keys ranked
    let lead = tp.groups * per;
    var m = vec2<u32>(0u, 0u);
    for (var g = lid; g < tp.groups; g += WG) {
        m = larger(m, part[g * tp.k + tp.k - 1u]);
    }
    var mine = vec2<u32>(0u, 0u);
    if (lead <= WG && lid < lead) {
        mine = part[lid / per * tp.k + lid % per];
    }
    candidates[lid] = mine;
    if (lid < K_MAX) {
        top[lid] = vec2<u32>(0u, 0u);
    }
    if (lid == 0u) {
        bound = vec2<u32>(0u, 0u);
        atomicStore(&count, 0u);
    }
    let largest_kth = workgroup_largest(m, lid REDUCE_PASS); // its barriers publish the candidates
    offer_bound(mine, min(lead, WG));
    workgroupBarrier();
    let least = larger(largest_kth, bound);
    for (var i = lid; i < total; i += WG) {
        let key = part[i];
        if (is_key(key) && !above(least, key)) {
            let at = atomicAdd(&count, 1u);
            if (at < GATHERED) {
                gathered[at] = key;
            }
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        gathered_len = atomicLoad(&count);
    }
    let len = workgroupUniformLoad(&gathered_len);
    if (len <= GATHERED) {
        for (var i = lid; i < len; i += WG) {
            let key = gathered[i];
            let rank = gathered_rank(key, len);
            if (rank < tp.k) {
                top[rank] = key;
            }
        }
    } else {
        var last = vec2<u32>(0xffffffffu, 0xffffffffu);
        for (var r = 0u; r < tp.k; r++) {
            var best_below = vec2<u32>(0u, 0u);
            for (var i = lid; i < total; i += WG) {
                let key = part[i];
                if (above(last, key) && !above(least, key)) {
                    best_below = larger(best_below, key);
                }
            }
            last = workgroup_largest(best_below, lid REDUCE_PASS);
            if (lid == 0u) {
                top[r] = last;
            }
        }
    }
    workgroupBarrier();
    if (lid < tp.k) {
        out[lid] = top[lid];
    }
    if (tp.draw != 0u) {
        draw_token(lid);
    }
}
