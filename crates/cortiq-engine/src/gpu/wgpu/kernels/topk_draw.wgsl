// The sampled token drawn on the device from the merged top-k keys (topk_merge.wgsl's
// output, descending), as `sample::draw` draws it on the host: probabilities at the
// temperature, cut by min-p then top-p, then the candidate whose slice of the kept mass
// holds u * kept, all in f32 and summed in candidate order. Its exp and division may differ
// from the host's in the last bit, so a draw within an ulp of a slice's edge can differ: the
// host's own draw decides, and a token queued on a different device draw is dropped. One
// invocation (k <= 64); 0 where no candidate is finite.

struct DrawParams {
    k: u32,
    temperature: f32,
    min_p: f32,
    top_p: f32,
    u: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> keys: array<vec2<u32>>;   // (64) descending, (0, 0) past the finite values
@group(0) @binding(1) var<storage, read_write> best: array<u32>;   // (1) the drawn token
@group(0) @binding(2) var<uniform> dp: DrawParams;

var<private> probs: array<f32, 64>;

// The logit of a key (topk_keys.wgsl's `order_key` undone).
fn key_value(key: vec2<u32>) -> f32 {
    return bitcast<f32>(select(~key.x, key.x & 0x7fffffffu, (key.x & 0x80000000u) != 0u));
}

fn key_index(key: vec2<u32>) -> u32 {
    return 0xffffffffu - key.y;
}

@compute @workgroup_size(1)
fn main() {
    var n = 0u;
    while (n < dp.k && (keys[n].x != 0u || keys[n].y != 0u)) {
        n++;
    }
    if (n == 0u) {
        best[0] = 0u;
        return;
    }
    let top = key_value(keys[0]);
    var total = 0.0;
    for (var i = 0u; i < n; i++) {
        probs[i] = exp((key_value(keys[i]) - top) / dp.temperature);
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
            best[0] = key_index(keys[i]);
            return;
        }
        r -= probs[i];
    }
    best[0] = key_index(keys[keep - 1u]);
}
