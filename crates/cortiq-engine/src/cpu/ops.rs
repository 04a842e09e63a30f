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

/// gate <- silu(gate) * up.
pub fn swiglu(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        *g = silu(*g) * u;
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
    fn softmax_sums_to_one_and_rmsnorm_normalizes() {
        let mut x = vec![1.0, 2.0, 3.0, -1e9];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        let mut out = vec![0.0; 4];
        rmsnorm(&mut out, &[2.0, 2.0, 2.0, 2.0], &[1.0, 2.0, 1.0, 1.0], 0.0);
        assert_eq!(out, vec![1.0, 2.0, 1.0, 1.0]);
    }
}
