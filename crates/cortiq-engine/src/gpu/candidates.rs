//! The sampler's candidates as the device kernels hand them back (CUDA `kernels/topk.cu`,
//! wgpu `kernels/topk_*.wgsl`): 64-bit keys whose descending order is the order of
//! `sample::top_candidates` (the value in IEEE total order, -0 below +0, then the lower
//! index), 0 for a slot past the finite values.

/// Largest k the devices pick; a larger request reads the logits back.
#[cfg(any(feature = "gpu", feature = "cuda"))]
pub(crate) const DEVICE_TOP_K_MAX: usize = 64;

/// A device's top-k candidates (as `sample::top_candidates` gives them) and, where a draw
/// was asked for, the token it drew from them (the backends' parity-test hooks).
#[cfg(any(feature = "gpu", feature = "cuda"))]
pub type PickedAndDrawn = (Vec<(u32, f32)>, Option<u32>);

/// The index in a nonzero key: its low word is the index's complement (the top-k keys, and
/// CUDA's argmax key, matvec.cu's `argmax_key`).
pub(crate) fn key_index(key: u64) -> u32 {
    u32::MAX - key as u32
}

/// The (index, value) of a key; None for key 0 (no finite value).
fn candidate(key: u64) -> Option<(u32, f32)> {
    if key == 0 {
        return None;
    }
    let ord = (key >> 32) as u32;
    let bits = if ord & 0x8000_0000 != 0 { ord & 0x7fff_ffff } else { !ord };
    Some((key_index(key), f32::from_bits(bits)))
}

/// The candidates of keys in descending order, up to the first 0.
pub(crate) fn candidates(keys: impl IntoIterator<Item = u64>) -> Vec<(u32, f32)> {
    keys.into_iter().map_while(candidate).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    /// The kernels' key of a value and its index, restated for the host test.
    fn order_key(v: f32, i: u32) -> u64 {
        if !v.is_finite() {
            return 0;
        }
        let u = v.to_bits();
        let ord = if u & 0x8000_0000 != 0 { !u } else { u | 0x8000_0000 };
        ((ord as u64) << 32) | (u32::MAX - i) as u64
    }

    /// Keys in descending order, decoded, are the sampler's candidate order over the same
    /// values (ties, -0 and +0, NaN and infinities included), and each decodes to its value's
    /// exact bits.
    #[test]
    fn descending_keys_decode_to_the_samplers_candidate_order() {
        let mut rng = SplitMix64::new(7);
        let mut values: Vec<f32> = (0..3000).map(|_| (rng.uniform() * 40.0 - 20.0).round() / 4.0).collect();
        values.extend([0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, -1e-45, 1e-45]);
        let mut keys: Vec<u64> = values.iter().enumerate().map(|(i, &v)| order_key(v, i as u32)).collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        for k in [1, 7, 40, 64, values.len()] {
            let got = candidates(keys[..k].iter().copied());
            let want = crate::sample::top_candidates(&values, k);
            assert_eq!(got.len(), want.len(), "k = {k}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((g.0, g.1.to_bits()), (w.0, w.1.to_bits()), "k = {k}");
            }
        }
        assert_eq!(candidate(0), None);
    }
}
