// g <- act(g) * u over n elements: the FFN's activation step between gate/up and down.
// act: 0 SiLU, 1 exact GELU (erf by Abramowitz-Stegun 7.1.26, as the CPU twin), 2 tanh-GELU.

struct ActParams {
    n: u32,
    act: u32,
    grid_x: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read_write> g: array<f32>;
@group(0) @binding(1) var<storage, read> u: array<f32>;
@group(0) @binding(2) var<uniform> ap: ActParams;

fn erf_as(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.3275911 * abs(z));
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(z) * (1.0 - poly * exp(-z * z));
}

fn activate(v: f32) -> f32 {
    if (ap.act == 0u) {
        return v / (1.0 + exp(-v));
    }
    if (ap.act == 1u) {
        return 0.5 * v * (1.0 + erf_as(v * 0.70710678));
    }
    // tanh-GELU; the argument is clamped where tanh has long saturated (avoids inf/inf).
    let z = clamp(0.7978846 * (v + 0.044715 * v * v * v), -15.0, 15.0);
    return 0.5 * v * (1.0 + tanh(z));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * ap.grid_x + wg.x) * 256u + lid;
    if (i < ap.n) {
        g[i] = activate(g[i]) * u[i];
    }
}
