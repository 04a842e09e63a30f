//! Device kernels against their CPU twins, for every compiled GPU backend: fresh random
//! inputs, odd shapes (rows and columns off the workgroup size, one row, large), outputs
//! poisoned with NaN before each run so an unwritten element fails, NaN never passes.
//! Without a GPU backend in the build these tests are ignored with the reason; with one but
//! no device they fail loudly unless `CORTIQ_ALLOW_NO_GPU=1` (then they print SKIP).

use cortiq_core::rng::SplitMix64;
use cortiq_core::Codec;
use cortiq_engine::cpu::matmul::WeightView;
use cortiq_engine::gpu::backend::{Activation, Backend, DeviceOutcome, FfnJob, MatmulJob, MultiMatmulJob, WeightArg};

/// The backend under test, or a reason it cannot run here.
#[allow(unreachable_code)]
fn backend() -> Option<Box<dyn Backend>> {
    #[cfg(feature = "cuda")]
    {
        return match cortiq_engine::gpu::cuda::CudaBackend::new(0) {
            Ok(b) => Some(Box::new(b)),
            Err(e) if std::env::var("CORTIQ_ALLOW_NO_GPU").is_ok_and(|v| v == "1") => {
                eprintln!("SKIP gpu parity: no CUDA device ({e})");
                None
            }
            Err(e) => panic!("built with the cuda feature but no CUDA device came up: {e}"),
        };
    }
    None
}

struct Packed {
    codec: Codec,
    rows: usize,
    cols: usize,
    bytes: Vec<u8>,
}

impl Packed {
    fn random(rng: &mut SplitMix64, codec: Codec, rows: usize, cols: usize) -> Packed {
        let bytes = (0..rows).flat_map(|_| codec.pack_row(&rng.normals(cols, 0.05)).unwrap()).collect();
        Packed { codec, rows, cols, bytes }
    }
    fn arg(&self) -> WeightArg<'_> {
        WeightArg { key: self.bytes.as_ptr() as u64, view: WeightView { codec: self.codec, rows: self.rows, cols: self.cols, bytes: &self.bytes } }
    }
    fn row(&self, r: usize) -> &[u8] {
        let rb = self.bytes.len() / self.rows;
        &self.bytes[r * rb..(r + 1) * rb]
    }
    /// Reference y (batch, rows) with the codec's f64 dot, and |w_r| |x_b| per element.
    fn reference(&self, x: &[f32], batch: usize) -> (Vec<f32>, Vec<f32>) {
        let mut y = Vec::new();
        let mut scale = Vec::new();
        let mut dec = vec![0f32; self.cols];
        for b in 0..batch {
            let xb = &x[b * self.cols..(b + 1) * self.cols];
            let xn = xb.iter().map(|v| v * v).sum::<f32>().sqrt();
            for r in 0..self.rows {
                self.codec.unpack_row(self.row(r), &mut dec).unwrap();
                y.push(self.codec.dot_row(self.row(r), xb).unwrap());
                scale.push(dec.iter().map(|v| v * v).sum::<f32>().sqrt() * xn);
            }
        }
        (y, scale)
    }
}

/// Relative error bound per element: f32 accumulation over up to a few thousand products.
const REL: f32 = 1e-4;

fn check(name: &str, got: &[f32], want: &[f32], scale: &[f32], seed: u64) {
    assert_eq!(got.len(), want.len());
    for (i, ((g, w), s)) in got.iter().zip(want).zip(scale).enumerate() {
        assert!(g.is_finite(), "{name}: element {i} is {g} (unwritten or NaN), seed {seed}");
        assert!((g - w).abs() <= REL * s + 1e-6, "{name}: element {i}: {g} vs {w} (scale {s}), seed {seed}");
    }
}

const SHAPES: [(usize, usize, usize); 6] = [(1, 32, 1), (37, 96, 1), (4097, 576, 1), (300, 2048, 3), (13, 4128, 2), (64, 256, 130)];

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "SKIP gpu parity: no GPU backend compiled in (build with --features cuda on the GPU machine)")]
fn matmul_matches_the_cpu_reference_for_every_codec_and_odd_shapes() {
    let Some(be) = backend() else { return };
    let mut rng = SplitMix64::fresh();
    let seed = rng.seed();
    for codec in [Codec::Q4_0, Codec::Q4Tiled, Codec::Q4_1, Codec::Q8_0, Codec::F16, Codec::F32] {
        for (rows, cols, batch) in SHAPES {
            let w = Packed::random(&mut rng, codec, rows, cols);
            let x = rng.normals(batch * cols, 1.0);
            let mut out = vec![f32::NAN; batch * rows];
            let job = MatmulJob { w: w.arg(), x: &x, batch };
            assert!(matches!(be.matmul(&job, &mut out), DeviceOutcome::Completed { .. }), "{codec} {rows}x{cols}x{batch} not completed");
            let (want, scale) = w.reference(&x, batch);
            check(&format!("{codec} {rows}x{cols} batch {batch}"), &out, &want, &scale, seed);
        }
    }
}

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "SKIP gpu parity: no GPU backend compiled in (build with --features cuda on the GPU machine)")]
fn weights_upload_once_and_unsupported_codecs_decline_untouched() {
    let Some(be) = backend() else { return };
    let mut rng = SplitMix64::fresh();
    let w = Packed::random(&mut rng, Codec::Q4_0, 64, 256);
    let x = rng.normals(256, 1.0);
    let mut out = vec![0f32; 64];
    let job = MatmulJob { w: w.arg(), x: &x, batch: 1 };
    assert_eq!(be.matmul(&job, &mut out), DeviceOutcome::Completed { cold: true });
    let up = be.upload_bytes();
    assert_eq!(be.matmul(&job, &mut out), DeviceOutcome::Completed { cold: false });
    assert_eq!(be.upload_bytes(), up, "no re-upload in steady state");
    assert!(be.is_resident(job.w.key));
    let k = Packed::random(&mut rng, Codec::Q6K, 4, 256);
    let mut poisoned = vec![f32::NAN; 4];
    let kjob = MatmulJob { w: k.arg(), x: &x, batch: 1 };
    assert!(matches!(be.matmul(&kjob, &mut poisoned), DeviceOutcome::Declined(_)));
    assert!(poisoned.iter().all(|v| v.is_nan()), "a decline leaves outputs untouched");
}

#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "SKIP gpu parity: no GPU backend compiled in (build with --features cuda on the GPU machine)")]
fn qkv_batch_and_ffn_match_the_cpu_reference() {
    let Some(be) = backend() else { return };
    let mut rng = SplitMix64::fresh();
    let seed = rng.seed();
    for batch in [1usize, 5] {
        let (d, kv, ff) = (576, 192, 1536);
        let ws = [Packed::random(&mut rng, Codec::Q4_1, d, d), Packed::random(&mut rng, Codec::Q4_1, kv, d), Packed::random(&mut rng, Codec::Q8_0, kv, d)];
        let x = rng.normals(batch * d, 1.0);
        let mut o: Vec<Vec<f32>> = ws.iter().map(|w| vec![f32::NAN; batch * w.rows]).collect();
        let job = MultiMatmulJob { ws: ws.iter().map(Packed::arg).collect(), x: &x, batch };
        let mut outs: Vec<&mut [f32]> = o.iter_mut().map(|v| &mut v[..]).collect();
        assert!(matches!(be.matmul_many(&job, &mut outs), DeviceOutcome::Completed { .. }));
        for (w, got) in ws.iter().zip(&o) {
            let (want, scale) = w.reference(&x, batch);
            check("qkv", got, &want, &scale, seed);
        }
        let (g, u, dn) = (Packed::random(&mut rng, Codec::Q4_0, ff, d), Packed::random(&mut rng, Codec::Q4_0, ff, d), Packed::random(&mut rng, Codec::Q4_0, d, ff));
        let mut out = vec![f32::NAN; batch * d];
        let fjob = FfnJob { gate: g.arg(), up: u.arg(), down: dn.arg(), act: Activation::Silu, x: &x, batch };
        assert!(matches!(be.ffn(&fjob, &mut out), DeviceOutcome::Completed { .. }));
        let (gr, _) = g.reference(&x, batch);
        let (ur, _) = u.reference(&x, batch);
        let h: Vec<f32> = gr.iter().zip(&ur).map(|(a, b)| a / (1.0 + (-a).exp()) * b).collect();
        let (want, scale) = dn.reference(&h, batch);
        // The hidden activation carries the first two matmuls' f32 error into the third.
        let loose: Vec<f32> = scale.iter().map(|s| s * 10.0).collect();
        check("ffn", &out, &want, &loose, seed);
        let gelu = FfnJob { act: Activation::GeluExact, ..fjob };
        let mut untouched = vec![f32::NAN; batch * d];
        assert!(matches!(be.ffn(&gelu, &mut untouched), DeviceOutcome::Declined(_)), "an activation without a kernel declines, never substitutes");
        assert!(untouched.iter().all(|v| v.is_nan()));
    }
}

/// The whole-token graph against the CPU path on synthesized models: teacher-forced along
/// the CPU's greedy tokens, the logits must agree within the CPU path's own quantization
/// noise (it multiplies int8-quantized activations; the device uses f32), and the device
/// KV mirror read back must match the host cache's rows.
#[test]
#[cfg_attr(not(feature = "cuda"), ignore = "SKIP gpu parity: no GPU backend compiled in (build with --features cuda on the GPU machine)")]
fn token_graph_matches_the_cpu_path() {
    #[cfg(feature = "cuda")]
    {
        use cortiq_engine::gpu::{Gpu, GpuConfig};
        use cortiq_engine::pipeline::Session;
        use std::sync::Arc;
        let Some(_) = backend() else { return };
        let dir = tempfile::tempdir().unwrap();
        for (shape, codec) in [("tiny", "q4_0"), ("smollm2-135m", "q4_0"), ("smollm2-135m", "q8_0")] {
            let path = dir.path().join(format!("{shape}-{codec}.gguf"));
            cortiq_engine::synth::synth(shape, codec, &path, 5).unwrap();
            let engine = cortiq_engine::generate::Engine::load(&path).unwrap();
            let cuda = Box::new(cortiq_engine::gpu::cuda::CudaBackend::new(0).unwrap());
            let gpu = Arc::new(Gpu::new(Some(cuda), GpuConfig { min_rows: Some(usize::MAX), ..GpuConfig::for_tests() }));
            let cpu_gpu = Arc::new(Gpu::new(None, GpuConfig::for_tests()));
            // A long prompt, so attention spans several 64-position chunks of the split kernel.
            let prompt = engine.tokenize(&"hello world 12 34 ".repeat(20)).unwrap();
            assert!(prompt.len() > 150, "{}", prompt.len());
            let ctx = prompt.len() + 80;
            let mut cpu = Session::with_gpu(Arc::clone(&engine.model), ctx, cpu_gpu);
            let mut dev = Session::with_gpu(Arc::clone(&engine.model), ctx, Arc::clone(&gpu));
            let mut a = cpu.prefill(&prompt).unwrap();
            let mut b = dev.prefill(&prompt).unwrap();
            assert_eq!(a, b, "prefill ran on the CPU in both");
            dev.begin_generation();
            let (mut worst, mut same) = (0f32, 0);
            let steps = 64;
            for _ in 0..steps {
                let t = cortiq_engine::sample::argmax(&a);
                same += usize::from(t == cortiq_engine::sample::argmax(&b));
                a = cpu.step(t).unwrap();
                b = dev.step(t).unwrap();
                assert!(b.iter().all(|v| v.is_finite()), "{shape}: NaN in graph logits");
                let num: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
                let den: f32 = a.iter().map(|x| x * x).sum();
                worst = worst.max((num / den).sqrt());
            }
            eprintln!("{shape} {codec}: graph vs CPU logits, worst relative L2 {worst:.2e}, argmax agreement {same}/{steps}");
            assert!(worst < 3e-2, "{shape} {codec}: relative L2 {worst}");
            assert!(gpu.explain_table().contains("token graph"), "{}", gpu.explain_table());
            // Reading the mirror back reproduces the host rows (within f16 storage).
            let n = dev.len();
            let before = dev.kv.len();
            let h = dev.forward(&[3]).unwrap();
            let h_cpu = cpu.forward(&[3]).unwrap();
            assert!(before < n && dev.kv.len() == n + 1);
            let err: f32 = h.iter().zip(&h_cpu).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
            let mag: f32 = h_cpu.iter().map(|x| x.abs()).fold(0.0, f32::max);
            assert!(err <= 3e-2 * mag, "{shape}: per-op after a graph run differs by {err} (max {mag})");
        }
    }
}
