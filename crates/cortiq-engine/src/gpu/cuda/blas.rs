//! Prompt-chunk GEMMs through cuBLAS: each quantized weight decoded to f16 into a scratch
//! matrix (`dequant_f16` in graph.cu), the activations in f16, `cublasGemmEx` f16 x f16 with
//! f32 accumulation into f32 outputs. On the H200 this beat cortiq's int8 tensor-core GEMM
//! (mma.cu) by 1.4-2.7x per op on llama-8b's shapes, the dequant included (bench/NOTES.md,
//! "CUDA prefill, twelfth session"), so the prefill graph takes it wherever libcublas loads;
//! `CMF_CUDA_CUBLAS=0` keeps the int8 GEMMs.

use super::launch::{launch, KernelArgs};
use super::{err, kind, CudaBackend, Resident};
use crate::gpu::backend::WeightArg;
use cudarc::cublas::{result as blas, sys as blas_sys, CudaBlas};
use cudarc::driver::{CudaContext, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig};
use std::sync::Arc;

/// A cuBLAS handle bound to the backend's stream, and that stream's context.
pub(super) struct Blas {
    handle: CudaBlas,
    ctx: Arc<CudaContext>,
}

impl Blas {
    /// cuBLAS on `stream`, or why the prompt GEMMs stay int8: turned off by
    /// `CMF_CUDA_CUBLAS=0`, the library not found, or its handle not made.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Blas, String> {
        if crate::gpu::selection::switched_off("CMF_CUDA_CUBLAS") {
            return Err("turned off by CMF_CUDA_CUBLAS=0".into());
        }
        // SAFETY: only tries to dlopen the library and reports whether that worked.
        if !unsafe { blas_sys::is_culib_present() } {
            return Err("libcublas not found (LD_LIBRARY_PATH)".into());
        }
        let handle = CudaBlas::new(Arc::clone(stream)).map_err(|e| format!("cuBLAS handle: {e:?}"))?;
        Ok(Blas { handle, ctx: Arc::clone(stream.context()) })
    }

    /// Queue y (batch, rows) = x (batch, cols) . W^T, plus y's old values where `add`; W is
    /// (rows, cols) f16 row-major, x f16, y f32, all contiguous.
    pub fn gemm(&self, s: &CudaStream, x: &impl DevicePtr<u16>, w: &impl DevicePtr<u16>, y: &mut impl DevicePtrMut<f32>, (batch, rows, cols): (usize, usize, usize), add: bool) -> Result<(), String> {
        let dim = |v: usize| i32::try_from(v).map_err(|_| format!("GEMM dimension {v} beyond i32"));
        let (m, n, k) = (dim(rows)?, dim(batch)?, dim(cols)?);
        let (alpha, beta) = (1f32, if add { 1f32 } else { 0f32 });
        // cuBLAS works in the thread's current context: the backend's own (mod.rs `new`).
        s.context().bind_to_thread().map_err(err)?;
        let (wp, _rw) = w.device_ptr(s);
        let (xp, _rx) = x.device_ptr(s);
        let (yp, _ry) = y.device_ptr_mut(s);
        // Column-major: y^T (rows x batch, ld rows) = W (stored as W^T: cols x rows, ld cols,
        // transposed) . x^T (cols x batch, ld cols).
        // SAFETY: the caller's buffers hold the sizes the dimensions name; alpha and beta
        // are f32 as CUBLAS_COMPUTE_32F wants; the handle runs on `s`, the buffers' stream.
        unsafe {
            blas::gemm_ex(
                *self.handle.handle(),
                blas_sys::cublasOperation_t::CUBLAS_OP_T,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                m,
                n,
                k,
                (&alpha) as *const f32 as *const _,
                wp as *const _,
                blas_sys::cudaDataType_t::CUDA_R_16F,
                k,
                xp as *const _,
                blas_sys::cudaDataType_t::CUDA_R_16F,
                k,
                (&beta) as *const f32 as *const _,
                yp as *mut _,
                blas_sys::cudaDataType_t::CUDA_R_32F,
                m,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| format!("cuBLAS GEMM {batch} x {cols} . ({rows} x {cols})^T: {}", err(e)))
    }
}

impl Drop for Blas {
    /// cuBLAS destroys a handle in the thread's current context (synchronizing it), so the
    /// backend's own is made current first.
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
    }
}

impl CudaBackend {
    /// Queue resident weight `w` (an int8-dotted kind or F16: `f16_decodable`; rows x cols) decoded to f16 into the
    /// rows * cols halves at `into`, setting the word `bad` where a value is past f16's range.
    pub(super) fn queue_dequant(&self, w: &WeightArg, res: &Resident, into: &impl DevicePtr<u16>, bad: &impl DevicePtr<u32>) -> Result<(), String> {
        let k = kind(w.view.codec).filter(|&k| super::f16_decodable(k)).ok_or_else(|| format!("{}: no f16 decoder", w.view.codec))?;
        let units = w.view.rows * w.view.cols / 32;
        let threads = u32::try_from(4 * units).map_err(|_| "weight too large for one dequant launch".to_string())?;
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(&res.data, s).int(k).int(res.a_off).buf(into, s).int(w.view.rows as i32).int(w.view.cols as i32).buf(bad, s);
        let cfg = LaunchConfig { grid_dim: (threads.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the kernel reads the resident planar weight (rows x cols of kind k) and
        // writes rows * cols halves at `into`, which the caller sized for them, and at most
        // the one word at `bad`.
        unsafe { launch(s, &self.funcs["dequant_f16"], cfg, &a, false) }.map_err(err)
    }

    /// Queue the first `n` floats of `x` rounded to f16 into `out` (the f16 GEMMs' input),
    /// setting the word `bad` where a value is past f16's range.
    pub(super) fn queue_to_f16(&self, x: &impl DevicePtr<f32>, out: &impl DevicePtr<u16>, n: usize, bad: &impl DevicePtr<u32>) -> Result<(), String> {
        let blocks = u32::try_from(n.div_ceil(256)).map_err(|_| "too many values for one f16 rounding launch".to_string())?;
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(x, s).buf(out, s).long(n as i64).buf(bad, s);
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the kernel reads n floats at x and writes n halves at out (the caller sized
        // both for them) and at most the one word at `bad`.
        unsafe { launch(s, &self.funcs["to_f16"], cfg, &a, false) }.map_err(err)
    }
}
