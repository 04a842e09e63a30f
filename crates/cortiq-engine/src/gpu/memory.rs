//! Memory-side helpers of the facade (SPEC section 6): content fingerprints for
//! pointer-keyed device caches, and the f16 operand guard.

/// Below this size a fingerprint hashes every byte.
pub const EXACT_FINGERPRINT_BYTES: usize = 4096;
/// Sampled windows above that size: count and width.
const WINDOWS: usize = 16;
const WINDOW_BYTES: usize = 256;

/// A cheap content fingerprint proving a pointer-keyed cache entry still holds the same
/// bytes: exact below 4 KiB; above, the length plus 16 windows spread over the buffer
/// (first and last included).
pub fn fingerprint(bytes: &[u8]) -> u64 {
    use xxhash_rust::xxh3::Xxh3;
    let mut h = Xxh3::new();
    h.update(&(bytes.len() as u64).to_le_bytes());
    if bytes.len() <= EXACT_FINGERPRINT_BYTES {
        h.update(bytes);
    } else {
        let last = bytes.len() - WINDOW_BYTES;
        for i in 0..WINDOWS {
            let start = last * i / (WINDOWS - 1);
            h.update(&bytes[start..start + WINDOW_BYTES]);
        }
    }
    h.digest()
}

/// Identifies a loaded model for a backend's graph buffers: where its first tensor is mapped
/// and the content fingerprints of its first and last tensors (a later model mapped at the
/// same address does not pass for this one). Two fingerprints per token, not one per weight.
pub fn model_key(m: &crate::model::Llama) -> u64 {
    let first = m.file.tensor_data(&m.file.tensors[0]);
    let last = m.file.tensor_data(&m.file.tensors[m.file.tensors.len() - 1]);
    first.as_ptr() as u64 ^ fingerprint(first).rotate_left(17) ^ fingerprint(last).rotate_left(41)
}

/// Largest finite f16 value.
pub const F16_MAX: f32 = 65504.0;

/// The f16 operand guard: an f16 matrix-unit path may take `x` only if every value is
/// finite and |x| <= 65504; otherwise the f32 kernel must run.
pub fn f16_guard(x: &[f32]) -> bool {
    x.iter().all(|v| v.is_finite() && v.abs() <= F16_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_exact_for_small_buffers_and_sees_sampled_changes_in_large_ones() {
        let a = vec![1u8; 4096];
        let mut b = a.clone();
        b[2000] = 2;
        assert_ne!(fingerprint(&a), fingerprint(&b), "exact below 4 KiB");
        let big = vec![7u8; 1 << 20];
        let mut first = big.clone();
        first[0] = 8;
        let mut last = big.clone();
        *last.last_mut().unwrap() = 8;
        assert_ne!(fingerprint(&big), fingerprint(&first));
        assert_ne!(fingerprint(&big), fingerprint(&last));
        assert_ne!(fingerprint(&big), fingerprint(&big[..big.len() - 1]), "length is part of it");
        assert_eq!(fingerprint(&big), fingerprint(&big.clone()));
    }

    #[test]
    fn f16_guard_rejects_overflow_and_nan() {
        assert!(f16_guard(&[0.0, -65504.0, 65504.0]));
        assert!(!f16_guard(&[65505.0]));
        assert!(!f16_guard(&[f32::NAN]));
        assert!(!f16_guard(&[f32::INFINITY]));
    }
}
