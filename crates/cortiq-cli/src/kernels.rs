//! `cortiq gpu --kernels`: per-op kernel throughput of the wgpu backend's matvec on the
//! matrix shapes of llama-1b and llama-8b, from GPU timestamps, against a stated bandwidth.

use anyhow::{anyhow, Result};
use cortiq_core::rng::SplitMix64;
use cortiq_core::Codec;
use cortiq_engine::cpu::matmul::WeightView;
use cortiq_engine::gpu::backend::{Backend, WeightArg};
use cortiq_engine::gpu::wgpu::{Activations, WgpuBackend, Q8_CODECS};
use rayon::prelude::*;

/// (label, codec, rows, cols): the decode matvecs that dominate a token.
const CASES: [(&str, Codec, usize, usize); 14] = [
    ("1b ffn gate/up", Codec::Q4_0, 8192, 2048),
    ("1b ffn down", Codec::Q4_0, 2048, 8192),
    ("1b lm_head", Codec::Q4_0, 128_256, 2048),
    ("8b ffn gate/up", Codec::Q4_0, 14_336, 4096),
    ("8b ffn down", Codec::Q4_0, 4096, 14_336),
    ("1b ffn gate/up", Codec::Q8_0, 8192, 2048),
    ("1b lm_head", Codec::Q8_0, 128_256, 2048),
    ("8b ffn gate/up", Codec::Q8_0, 14_336, 4096),
    ("8b ffn gate/up", Codec::Q4_1, 14_336, 4096),
    ("8b ffn gate/up", Codec::Q4K, 14_336, 4096),
    ("8b ffn gate/up", Codec::Q6K, 14_336, 4096),
    ("8b ffn gate/up", Codec::Q8Row, 14_336, 4096),
    ("8b ffn gate/up", Codec::F16, 14_336, 4096),
    ("smollm2 ffn", Codec::Q4_0, 1536, 576),
];

/// The copies of a matrix one timing cycles over add up to at least this (the H200's L2 is
/// 50 MiB).
const L2_DEFEAT_MIB: u64 = 160;

/// Random rows packed in `codec`, in parallel.
fn random_weight(codec: Codec, rows: usize, cols: usize, seed: u64) -> Result<Vec<u8>> {
    let rows: Vec<Vec<u8>> = (0..rows)
        .into_par_iter()
        .map(|r| {
            let mut rng = SplitMix64::new(seed ^ (r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            codec.pack_row(&rng.normals(cols, 0.05)).map_err(|e| anyhow!("{e}"))
        })
        .collect::<Result<_>>()?;
    Ok(rows.concat())
}

/// The markdown table of every case: bytes streamed, µs per dispatch, GB/s, floor fraction.
pub fn report(bandwidth_gbps: Option<f64>) -> Result<String> {
    let be = WgpuBackend::new().map_err(|e| anyhow!("the wgpu backend could not come up: {e}"))?;
    let info = be.info();
    let checked = std::env::var("CMF_WGPU_CHECKED").is_ok_and(|v| v == "1");
    let mut s = format!("wgpu matvec kernels on {} (subgroups {}, bounds checks {}), batch 1, GPU timestamps, 20 dispatches per pass cycling over copies of the matrix that together exceed {L2_DEFEAT_MIB} MiB (so they stream from memory, not L2), best of 3. Independent: each dispatch writes its own output; chained: all write one (a barrier between them).\n\n", info.name, info.subgroups, if checked { "on" } else { "off" });
    let floor = |chained| be.time_dispatch_floor(20, chained).map_err(|e| anyhow!("dispatch floor: {e}"));
    let (floor_free, floor_chained) = (floor(false)?, floor(true)?);
    s += &format!("Dispatch floor (the activation step over 256 floats, one workgroup, timed the same way): {:.2} us independent, {:.2} us chained.\n\n", floor_free * 1e6, floor_chained * 1e6);
    s += "| matrix | codec | rows x cols | workgroup | device bytes | independent us | GB/s | of bandwidth | chained us | GB/s |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (i, (label, codec, rows, cols)) in CASES.into_iter().enumerate() {
        let bytes = random_weight(codec, rows, cols, i as u64)?;
        let n_copies = ((L2_DEFEAT_MIB << 20) as usize).div_ceil(bytes.len()).clamp(1, 20);
        let copies: Vec<WeightArg> = (0..n_copies).map(|c| WeightArg { key: 0xC0DE_0000 + 64 * i as u64 + c as u64, view: WeightView { codec, rows, cols, bytes: &bytes } }).collect();
        let shape = be.matvec_shape(codec, rows, cols).map(|s| format!("{}x{}x{}", s.invocations, s.rows, s.unroll)).unwrap_or_default();
        // The int8-activation kernels too where the codec has one (x's int8 values and scales
        // are not counted in the bytes, as x is not for f32).
        let inputs: &[Activations] = if Q8_CODECS.contains(&codec) { &[Activations::F32, Activations::Int8] } else { &[Activations::F32] };
        for &x_as in inputs {
            let free = be.time_matvec(&copies, 20, false, x_as).map_err(|e| anyhow!("{label} {codec} {x_as:?}: {e}"))?;
            let chained = be.time_matvec(&copies, 20, true, x_as).map_err(|e| anyhow!("{label} {codec} {x_as:?}: {e}"))?;
            let dev_bytes = be.resident_size(copies[0].key).unwrap_or(0) as f64;
            let (gbps, gbps_chained) = (dev_bytes / free / 1e9, dev_bytes / chained / 1e9);
            let frac = bandwidth_gbps.map(|b| format!("{:.2}", gbps / b)).unwrap_or_else(|| "-".into());
            let input = match x_as {
                Activations::F32 => "",
                Activations::Int8 => ", int8 x",
            };
            s += &format!("| {label} | {codec}{input} | {rows} x {cols} | {shape} | {dev_bytes} | {:.2} | {gbps:.0} | {frac} | {:.2} | {gbps_chained:.0} |\n", free * 1e6, chained * 1e6);
            eprintln!("{label} {codec}{input}: {:.2} us independent, {:.2} us chained", free * 1e6, chained * 1e6);
        }
    }
    Ok(s)
}
