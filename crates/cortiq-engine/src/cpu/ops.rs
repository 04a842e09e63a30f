//! Elementwise and small ops of the llama block, written like the math.

/// out = x / rms(x) * weight.
/// The sum of squares is taken in f64, as ggml does.
pub fn rmsnorm(out: &mut [f32], x: &[f32], weight: &[f32], eps: f32) {
    let ss = (x.iter().map(|&v| (v * v) as f64).sum::<f64>() / x.len() as f64) as f32;
    let scale = 1.0 / (ss + eps).sqrt();
    for ((o, &v), &w) in out.iter_mut().zip(x).zip(weight) {
        *o = v * scale * w;
    }
}

/// (cos, sin) of every rotary pair at position `pos`: theta_i = pos * base^(-2i/rot_dims),
/// built by repeated f32 multiplication exactly as ggml's rope cache does.
pub fn rope_table(pos: usize, rot_dims: usize, freq_base: f32) -> Vec<(f32, f32)> {
    let theta_scale = freq_base.powf(-2.0 / rot_dims as f32);
    let mut theta = pos as f32;
    (0..rot_dims / 2)
        .map(|_| {
            let cs = (theta.cos(), theta.sin());
            theta *= theta_scale;
            cs
        })
        .collect()
}

/// Rotary embedding on one head vector with a table from `rope_table`. `neox`: pairs
/// (i, i + rot/2) (rotate-half); else (2i, 2i + 1).
pub fn rope_with(head: &mut [f32], table: &[(f32, f32)], neox: bool) {
    let half = table.len();
    for (i, &(cos, sin)) in table.iter().enumerate() {
        let (a, b) = if neox { (i, i + half) } else { (2 * i, 2 * i + 1) };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * cos - x1 * sin;
        head[b] = x0 * sin + x1 * cos;
    }
}

/// Rotary embedding of one head vector at position `pos` (see `rope_table`).
pub fn rope(head: &mut [f32], pos: usize, rot_dims: usize, freq_base: f32, neox: bool) {
    rope_with(head, &rope_table(pos, rot_dims, freq_base), neox);
}

/// In-place softmax.
pub fn softmax(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// tanh-approximated GELU as llama.cpp's CPU path computes it: looked up in a table of f16
/// results indexed by the f16-rounded input, saturated outside (-10, 10).
pub fn gelu_tanh(x: f32) -> f32 {
    gelu_from(gelu_table(), x)
}

/// `gelu_tanh` with the table in hand (a loop fetches it once).
fn gelu_from(table: &[f32], x: f32) -> f32 {
    if x <= -10.0 {
        return 0.0;
    }
    if x >= 10.0 {
        return x;
    }
    table[half::f16::from_f32(x).to_bits() as usize]
}

/// The f16-rounded tanh GELU of every f16 input (indexed by its bits), as f32: the inputs
/// `gelu_tanh` looks up take only these 65536 values. Built on first use (256 KiB).
fn gelu_table() -> &'static [f32] {
    static TABLE: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(|bits| gelu_tanh_f16(half::f16::from_bits(bits).to_f32())).collect())
}

/// The tanh GELU of an f16 value `h`, rounded to f16.
fn gelu_tanh_f16(h: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const COEF_A: f32 = 0.044_715;
    half::f16::from_f32(0.5 * h * (1.0 + (SQRT_2_OVER_PI * h * (1.0 + COEF_A * h * h)).tanh())).to_f32()
}

/// Exact GELU, x * Phi(x), with erf from Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7).
pub fn gelu_exact(x: f32) -> f32 {
    let z = (x as f64) / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let poly = t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = (1.0 - poly * (-z * z).exp()).copysign(z);
    (0.5 * x as f64 * (1.0 + erf)) as f32
}

/// gate <- act(gate) * up for a named activation.
pub fn gated(act: crate::gpu::backend::Activation, gate: &mut [f32], up: &[f32]) {
    use crate::gpu::backend::Activation;
    fn apply(gate: &mut [f32], up: &[f32], f: impl Fn(f32) -> f32) {
        for (g, &u) in gate.iter_mut().zip(up) {
            *g = f(*g) * u;
        }
    }
    match act {
        Activation::Silu => apply(gate, up, silu),
        Activation::GeluTanh => {
            let table = gelu_table();
            apply(gate, up, |x| gelu_from(table, x))
        }
        Activation::GeluExact => apply(gate, up, gelu_exact),
    }
}


/// x += y.
pub fn add_in_place(x: &mut [f32], y: &[f32]) {
    for (a, &b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rope_rotates_pairs_and_keeps_norm() {
        let mut h: Vec<f32> = (0..8).map(|i| i as f32 + 1.0).collect();
        let n0: f32 = h.iter().map(|v| v * v).sum();
        rope(&mut h, 3, 8, 10000.0, false);
        let n1: f32 = h.iter().map(|v| v * v).sum();
        assert!((n0 - n1).abs() < 1e-3);
        // Pair 0 rotates by angle 3 rad.
        let (s, c) = 3f32.sin_cos();
        assert!((h[0] - (1.0 * c - 2.0 * s)).abs() < 1e-5);
        let mut z = vec![1.0, 0.0, 0.0, 0.0];
        rope(&mut z, 0, 4, 10000.0, true);
        assert_eq!(z, vec![1.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn gelu_variants_match_their_definitions() {
        for x in [-12.0f32, -3.0, -0.5, 0.0, 0.7, 2.5, 11.0] {
            let exact = 0.5 * x as f64 * (1.0 + libm_erf(x as f64 / std::f64::consts::SQRT_2));
            assert!((gelu_exact(x) as f64 - exact).abs() < 1e-5, "{x}");
            assert!((gelu_tanh(x) as f64 - exact).abs() < 2e-2 * exact.abs().max(1.0), "{x}");
        }
    }

    /// The table holds exactly what the formula gives for the f16-rounded input: at every f16
    /// in (-10, 10) and at values between them; NaN stays NaN.
    #[test]
    fn the_gelu_table_is_the_formula_on_f16_inputs() {
        let f16s = (0..=u16::MAX).map(|b| half::f16::from_bits(b).to_f32());
        let between = (0..28_571).map(|k| -9.999_5 + k as f32 * 7e-4);
        for x in f16s.chain(between).filter(|x| x.abs() < 10.0) {
            let want = gelu_tanh_f16(half::f16::from_f32(x).to_f32());
            assert_eq!(gelu_tanh(x).to_bits(), want.to_bits(), "{x}");
        }
        assert!(gelu_tanh(f32::NAN).is_nan());
    }

    /// erf by its Taylor series (converges everywhere; enough terms for |x| < 9).
    fn libm_erf(x: f64) -> f64 {
        if x.abs() > 5.0 {
            return x.signum();
        }
        let (mut sum, mut term, mut n) = (0.0, x, 0.0);
        while term.abs() > 1e-17 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
        }
        2.0 / std::f64::consts::PI.sqrt() * sum
    }

    #[test]
    fn softmax_sums_to_one_and_rmsnorm_normalizes() {
        let mut x = vec![1.0, 2.0, 3.0, -1e9];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        let mut out = vec![0.0; 4];
        rmsnorm(&mut out, &[2.0, 2.0, 2.0, 2.0], &[1.0, 2.0, 1.0, 1.0], 0.0);
        assert_eq!(out, vec![1.0, 2.0, 1.0, 1.0]);
    }
}
