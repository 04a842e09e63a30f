//! Memory-side helpers of the facade (SPEC section 6): content fingerprints for
//! pointer-keyed device caches, the f16 operand guard, and the weight budget's setting.

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

/// The weight budget in bytes: `CMF_GPU_BUDGET` as bytes with an optional K/M/G/T suffix
/// (powers of 1024) or as a fraction of device memory (`0.5`); otherwise `default_fraction`
/// of `memory` (None when the device did not say).
pub fn weight_budget(setting: Option<&str>, memory: Option<u64>, default_fraction: f64) -> Result<Option<u64>, String> {
    let Some(s) = setting.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(memory.map(|m| (m as f64 * default_fraction) as u64));
    };
    let bad = || format!("CMF_GPU_BUDGET={s:?} is neither a size (8G, 512M, 1000000) nor a fraction (0.5)");
    if s.contains('.') && !s.ends_with(|c: char| c.is_ascii_alphabetic()) {
        let f: f64 = s.parse().map_err(|_| bad())?;
        if !(f > 0.0 && f <= 1.0) {
            return Err(bad());
        }
        return memory.map(|m| Some((m as f64 * f) as u64)).ok_or_else(|| format!("CMF_GPU_BUDGET={s}: a fraction needs the device memory size, which this adapter does not report; give bytes"));
    }
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        Some('T') => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(n.is_finite() && n > 0.0) {
        return Err(bad());
    }
    Ok(Some((n * mult as f64) as u64))
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

    #[test]
    fn the_weight_budget_takes_sizes_fractions_and_defaults_to_a_fraction_of_memory() {
        let gib = 1u64 << 30;
        assert_eq!(weight_budget(None, Some(10 * gib), 0.8), Ok(Some(8 * gib)));
        assert_eq!(weight_budget(None, None, 0.8), Ok(None));
        assert_eq!(weight_budget(Some("8G"), None, 0.8), Ok(Some(8 * gib)));
        assert_eq!(weight_budget(Some("512m"), None, 0.8), Ok(Some(512 << 20)));
        assert_eq!(weight_budget(Some("1.5G"), None, 0.8), Ok(Some(3 * gib / 2)));
        assert_eq!(weight_budget(Some("123456"), None, 0.8), Ok(Some(123456)));
        assert_eq!(weight_budget(Some("0.5"), Some(10 * gib), 0.8), Ok(Some(5 * gib)));
        assert!(weight_budget(Some("0.5"), None, 0.8).is_err());
        for bad in ["lots", "-1G", "1.5", "0", "G"] {
            assert!(weight_budget(Some(bad), Some(gib), 0.8).is_err(), "{bad}");
        }
    }
}
