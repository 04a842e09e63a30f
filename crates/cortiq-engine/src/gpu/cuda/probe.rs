//! Issue #8's prefill question, measured: a prompt chunk's projection through cortiq's int8
//! tensor-core GEMM (mma.cu) against cuBLAS's f16 GEMM behind a dequant step (the weight
//! decoded to f16 per call, the activations rounded to f16), both timed by CUDA events on
//! the backend's stream. A test hook; the prefill graph's cuBLAS path (`blas.rs`) was chosen
//! by its timings.

use super::{err, CudaBackend, MatvecHow, WeightArg};
use cudarc::driver::sys::CUevent_flags;

/// Both results of y (batch, rows) = x (batch, cols) . W^T and what each step took.
pub struct GemmProbe {
    /// The int8 tensor-core GEMM's output (activations quantized per 32 values).
    pub int8: Vec<f32>,
    /// cuBLAS's output (f16 weights and activations, f32 accumulation).
    pub cublas: Vec<f32>,
    /// Milliseconds per run: the int8 GEMM with its activation quantizer, the weight's
    /// dequant to f16, the activations' rounding to f16 plus the f16 GEMM.
    pub ms_int8: f32,
    pub ms_dequant: f32,
    pub ms_f16_gemm: f32,
}

impl CudaBackend {
    /// Test hook: `w` (Q4_0, Q4_1 or Q8_0) times `x` both ways, each step run `reps` times
    /// between two events after one untimed run. Err where cuBLAS is not installed, the
    /// codec has no tensor-core path, or an f16 operand would be past f16's range.
    pub fn prefill_gemm_probe(&self, w: &WeightArg, x: &[f32], batch: usize, reps: usize) -> Result<GemmProbe, String> {
        super::kind(w.view.codec).filter(|&k| k <= 2).ok_or("the probe takes Q4_0, Q4_1 or Q8_0")?;
        let (rows, cols) = (w.view.rows, w.view.cols);
        if batch < super::MMA_MIN_ROWS || x.len() != batch * cols || cols % 32 != 0 {
            return Err(format!("batch {batch} (at least {}) of {cols} columns expected", super::MMA_MIN_ROWS));
        }
        match self.ensure(&[w]) {
            Ok(_) => {}
            Err(super::Unfit::Failed(e)) => return Err(e),
            Err(u) => return Err(u.declined(false).into()),
        }
        let map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let res = map.get(&w.key).ok_or("weight not resident")?;
        let s = &self.stream;
        let xd = s.clone_htod(x).map_err(err)?;
        let mut y8 = s.alloc_zeros::<f32>(batch * rows).map_err(err)?;
        let mut yh = s.alloc_zeros::<f32>(batch * rows).map_err(err)?;
        let wh = s.alloc_zeros::<u16>(rows * cols).map_err(err)?;
        let xh = s.alloc_zeros::<u16>(batch * cols).map_err(err)?;
        let bad = s.alloc_zeros::<u32>(1).map_err(err)?;
        let blas = super::blas::Blas::new(s)?;
        let ev = || self._ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(err);
        let (e0, e1, e2, e3) = (ev()?, ev()?, ev()?, ev()?);
        let dequant = || self.queue_dequant(w, res, &wh, &bad);
        let f16_gemm = |y: &mut cudarc::driver::CudaSlice<f32>| -> Result<(), String> {
            self.queue_to_f16(&xd, &xh, batch * cols, &bad)?;
            blas.gemm(s, &xh, &wh, y, (batch, rows, cols), false)
        };
        // One untimed run of each (the results kept), then the timed repetitions.
        self.launch_matvec(w, &map, &xd, &mut y8, batch, MatvecHow::default())?;
        dequant()?;
        f16_gemm(&mut yh)?;
        if s.clone_dtoh(&bad).map_err(err)?[0] != 0 {
            return Err("the weight or the input has values past f16's range (the f16 operand guard)".into());
        }
        let mut scratch = s.alloc_zeros::<f32>(batch * rows).map_err(err)?;
        e0.record(s).map_err(err)?;
        for _ in 0..reps {
            self.launch_matvec(w, &map, &xd, &mut scratch, batch, MatvecHow::default())?;
        }
        e1.record(s).map_err(err)?;
        for _ in 0..reps {
            dequant()?;
        }
        e2.record(s).map_err(err)?;
        for _ in 0..reps {
            f16_gemm(&mut scratch)?;
        }
        e3.record(s).map_err(err)?;
        e3.synchronize().map_err(err)?;
        let per = |a: &cudarc::driver::CudaEvent, b: &cudarc::driver::CudaEvent| a.elapsed_ms(b).map(|ms| ms / reps.max(1) as f32).map_err(err);
        Ok(GemmProbe { int8: s.clone_dtoh(&y8).map_err(err)?, cublas: s.clone_dtoh(&yh).map_err(err)?, ms_int8: per(&e0, &e1)?, ms_dequant: per(&e1, &e2)?, ms_f16_gemm: per(&e2, &e3)? })
    }
}
