use super::*;
use crate::rng::SplitMix64;

/// Relative RMS error bound of pack -> unpack on normal data, per codec (a 4-bit code has
/// ~1/15 of the range per step; these bounds sit well above the measured errors).
fn roundtrip_bound(c: Codec) -> f64 {
    match c {
        Codec::F32 => 0.0,
        Codec::F16 => 1e-3,
        Codec::BF16 => 8e-3,
        Codec::Q8_0 | Codec::Q8Row => 2e-2,
        Codec::Q6K => 6e-2,
        Codec::Q5K | Codec::Q5_0 | Codec::Q5_1 => 1e-1,
        Codec::Q4_0 | Codec::Q4Tiled | Codec::Q4_1 | Codec::Q4K | Codec::IQ4NL | Codec::IQ4XS => 0.2,
        Codec::Q3K => 0.3,
        Codec::Q2K => 0.45,
    }
}

fn rel_rms(a: &[f32], b: &[f64]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(&x, &y)| (x as f64 - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    (num / den.max(1e-30)).sqrt()
}

#[test]
fn every_codec_round_trips_within_its_bound_on_odd_sizes() {
    let mut rng = SplitMix64::fresh();
    let seed = rng.seed();
    for c in ALL_CODECS {
        for blocks in [1usize, 3, 7] {
            let n = c.block_len().max(32) * blocks + if c.block_len() == 1 { 5 } else { 0 };
            let x = rng.normals(n, 0.02);
            let packed = c.pack_row(&x).unwrap();
            assert_eq!(packed.len() as u64, c.row_bytes(n as u64).unwrap());
            let mut y = vec![f32::NAN; n];
            c.unpack_row(&packed, &mut y).unwrap();
            assert!(y.iter().all(|v| v.is_finite()), "{c}: NaN/inf after unpack (seed {seed})");
            let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let err = rel_rms(&y, &x64);
            assert!(err <= roundtrip_bound(c), "{c} n={n}: rel rms {err} > {} (seed {seed})", roundtrip_bound(c));
        }
    }
}

#[test]
fn reference_dot_matches_f64_dot_of_decoded_and_of_original_values() {
    let mut rng = SplitMix64::fresh();
    let seed = rng.seed();
    for c in ALL_CODECS {
        let n = c.block_len().max(32) * 5;
        let w = rng.normals(n, 0.02);
        let x = rng.normals(n, 1.0);
        let packed = c.pack_row(&w).unwrap();
        let mut dec = vec![0f32; n];
        c.unpack_row(&packed, &mut dec).unwrap();
        let exact: f64 = dec.iter().zip(&x).map(|(&a, &b)| a as f64 * b as f64).sum();
        let got = c.dot_row(&packed, &x).unwrap() as f64;
        assert!((got - exact).abs() <= 1e-5 * exact.abs().max(1e-3), "{c}: dot {got} vs {exact} (seed {seed})");
        // Against the unquantized weights the error is the codec's own error, bounded by
        // the round-trip bound times |w| |x|.
        let orig: f64 = w.iter().zip(&x).map(|(&a, &b)| a as f64 * b as f64).sum();
        let norm = (w.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() * x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>()).sqrt();
        assert!((got - orig).abs() <= roundtrip_bound(c) * norm + 1e-6, "{c}: dot vs original too far (seed {seed})");
    }
}

#[test]
fn ragged_rows_and_wrong_lengths_are_errors_not_panics() {
    for c in ALL_CODECS {
        if c.block_len() > 1 {
            assert!(c.pack_row(&vec![0.0; c.block_len() + 1]).is_err(), "{c}");
            assert!(c.row_bytes(c.block_len() as u64 - 1).is_none());
        }
        let n = c.block_len().max(32);
        let bytes = vec![0u8; c.row_bytes(n as u64).unwrap() as usize + 1];
        assert!(c.unpack_row(&bytes, &mut vec![0.0; n]).is_err(), "{c}");
    }
    assert!(Codec::Q8_0.tensor_bytes(u64::MAX, 32).is_none());
}

#[test]
fn k_quant_scales_unpacked_at_once_equal_one_at_a_time() {
    let mut rng = SplitMix64::fresh();
    for _ in 0..1000 {
        let s: Vec<u8> = (0..12).map(|_| rng.next_u64() as u8).collect();
        let (sc, m) = kquant::scales_mins(&s);
        assert!((0..8).all(|j| kquant::scale_min(j, &s) == (sc[j], m[j])), "{s:?}");
    }
}

#[test]
fn names_and_ids_round_trip() {
    for c in ALL_CODECS {
        assert_eq!(Codec::from_name(c.name()), Some(c));
        assert_eq!(Codec::from_cmf_id(c.cmf_id()), Some(c));
        if let Some(t) = c.ggml_type() {
            let back = Codec::from_ggml_type(t).unwrap();
            assert!(back == c || (c == Codec::Q4Tiled && back == Codec::Q4_0));
        }
    }
    assert_eq!(Codec::from_ggml_type(999), None);
}

#[test]
fn q4_tiled_is_byte_identical_to_q4_0() {
    let x = SplitMix64::fresh().normals(96, 1.0);
    assert_eq!(Codec::Q4_0.pack_row(&x).unwrap(), Codec::Q4Tiled.pack_row(&x).unwrap());
}

/// Blocks of random bytes decoded by gguf-py (`gguf.quants.dequantize`, an implementation
/// no one here wrote), committed under tests/data: our decoders must agree bit for bit.
#[test]
fn unpack_matches_gguf_py_dequantize() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gguf_py_dequant.json")).unwrap();
    let cases: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = cases.as_array().unwrap();
    assert_eq!(cases.len(), 14);
    for case in cases {
        let c = Codec::from_ggml_type(case["ggml_type"].as_u64().unwrap() as u32).unwrap();
        let hex = case["hex"].as_str().unwrap();
        let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        let want: Vec<f32> = case["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
        let mut got = vec![0f32; want.len()];
        c.unpack_row(&bytes, &mut got).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-6 * w.abs().max(1e-3), "{c} value {i}: {g} vs gguf-py {w}");
        }
    }
}
