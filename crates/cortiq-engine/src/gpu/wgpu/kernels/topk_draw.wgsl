// The sampled token drawn on the device from the merged top-k keys (`top`, descending), as
// `sample::draw` draws it on the host: probabilities at the temperature, cut by min-p then
// top-p, then the candidate whose slice of the kept mass holds u * kept, all in f32 and
// summed in candidate order by one invocation (the exponentials by the first k). Its exp and
// division may differ from the host's in the last bit, so a draw within an ulp of a slice's
// edge can differ: the host's own draw decides, and a token queued on a different device draw
// is dropped. Token 0 where no candidate is finite.

struct DrawParams {
    temperature: f32,
    min_p: f32,
    top_p: f32,
    u: f32,
}

var<workgroup> probs: array<f32, K_MAX>;

// The logit of a key (`order_key` undone).
fn key_value(key: vec2<u32>) -> f32 {
    return bitcast<f32>(select(~key.x, key.x & 0x7fffffffu, (key.x & 0x80000000u) != 0u));
}

fn key_index(key: vec2<u32>) -> u32 {
    return 0xffffffffu - key.y;
}

// best[0]: the token drawn from `top` (after a barrier that published it). Call from uniform
// control flow, every invocation.
fn draw_token(lid: u32) {
    if (lid < tp.k && is_key(top[lid])) {
        probs[lid] = exp((key_value(top[lid]) - key_value(top[0])) / dp.temperature);
    }
    workgroupBarrier();
    if (lid != 0u) {
        return;
    }
    var n = 0u;
    while (n < tp.k && is_key(top[n])) {
        n++;
    }
    if (n == 0u) {
        best[0] = 0u;
        return;
    }
    var total = 0.0;
    for (var i = 0u; i < n; i++) {
        total += probs[i];
    }
    for (var i = 0u; i < n; i++) {
        probs[i] = probs[i] / total;
    }
    let floor = dp.min_p * probs[0];
    var keep = 0u;
    while (keep < n && probs[keep] >= floor) {
        keep++;
    }
    keep = max(keep, 1u);
    var mass = 0.0;
    for (var i = 0u; i < keep; i++) {
        mass += probs[i];
        if (mass >= dp.top_p) {
            keep = i + 1u;
            break;
        }
    }
    var kept = 0.0;
    for (var i = 0u; i < keep; i++) {
        kept += probs[i];
    }
    var r = dp.u * kept;
    for (var i = 0u; i < keep; i++) {
        if (r < probs[i]) {
            best[0] = key_index(top[i]);
            return;
        }
        r -= probs[i];
    }
    best[0] = key_index(top[keep - 1u]);
}
