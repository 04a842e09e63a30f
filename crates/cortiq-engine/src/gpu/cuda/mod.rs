//! The native CUDA backend (feature `cuda`): cudarc with the driver and NVRTC loaded at run
//! time, so the build needs no CUDA toolkit. Kernels live in `kernels/*.cu`, compiled once per
//! process. Weights are uploaded on first use and stay resident, keyed by the facade's weight
//! key and proven by a content fingerprint. Every job here is one stream, one synchronize;
//! on any CUDA error nothing is written to the caller's outputs.
//!
//! This is the first cut: per-op matvec/GEMM (one warp per row), the dense FFN, and the
//! whole-token decode graph (`graph.rs`) built from the same kernels.

mod graph;

use super::backend::{Activation, Backend, DeviceInfo, DeviceOutcome, FfnJob, MatmulJob, MultiMatmulJob, TokenGraphJob, WeightArg};
use crate::kv::KvCache;
use super::memory::fingerprint;
use cortiq_core::Codec;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One module: the matvec helpers, then the graph kernels that use them.
const KERNELS: [&str; 2] = [include_str!("kernels/matvec.cu"), include_str!("kernels/graph.cu")];
const KERNEL_NAMES: [&str; 10] = ["matvec", "silu_mul", "embed_row", "rmsnorm", "attn_split", "attn_combine", "qkv", "gate_up_silu", "rope_store", "add_rmsnorm"];
/// Fraction of device memory weights may occupy (the rest: activations, KV, the driver).
const WEIGHT_BUDGET_FRACTION: f64 = 0.9;
/// Threads per block of the matvec kernel: 8 warps.
const MATVEC_THREADS: u32 = 256;
/// Rows each matvec warp computes on large matrices (`MV_ROWS` in matvec.cu).
const MATVEC_ROWS_PER_WARP: u32 = 4;
/// From this many rows a matrix has warps enough to fill the H200's 132 SMs even with
/// several rows per warp (measured, bench/NOTES.md: 4 rows per warp everywhere took
/// llama-8b decode from 95 to 140 tok/s but smollm2-135m's 576-row matrices from 673 to 553;
/// from 8192 rows only, 8b fell back to 124).
pub(super) const MULTI_ROW_MIN_ROWS: usize = 4096;

/// Rows per warp for a matrix of `rows` rows.
pub(super) fn rows_per_warp(rows: usize, most: u32) -> u32 {
    if rows >= MULTI_ROW_MIN_ROWS {
        most
    } else {
        1
    }
}

/// A resident weight: its device bytes and the fingerprint of the host bytes it came from.
struct Resident {
    data: CudaSlice<u8>,
    fingerprint: u64,
}

pub struct CudaBackend {
    /// Keeps the context alive for the stream and buffers.
    _ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: HashMap<&'static str, CudaFunction>,
    weights: Mutex<HashMap<u64, Resident>>,
    /// The token graph's buffers for the model last run.
    graph: Mutex<Option<graph::ModelGraph>>,
    /// KV mirrors per sequence.
    mirrors: Mutex<HashMap<u64, graph::Mirror>>,
    uploaded: AtomicU64,
    resident: AtomicU64,
    /// Token-graph profile (`CMF_GRAPH_HOSTPROF`).
    profile: Mutex<super::backend::GraphProfile>,
    budget: u64,
    info: DeviceInfo,
}

fn err(e: impl std::fmt::Debug) -> String {
    format!("{e:?}")
}

/// The kernels' codec kind for a weight codec, if they decode it.
fn kind(codec: Codec) -> Option<i32> {
    Some(match codec {
        Codec::Q4_0 | Codec::Q4Tiled => 0,
        Codec::Q4_1 => 1,
        Codec::Q8_0 => 2,
        Codec::F16 => 3,
        Codec::F32 => 4,
        _ => return None,
    })
}

impl CudaBackend {
    /// Bring up device `ordinal`: context, stream, compiled kernels.
    pub fn new(ordinal: usize) -> Result<CudaBackend, String> {
        // SAFETY: these only try to dlopen the libraries and report whether that worked.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("the CUDA driver library (libcuda.so) was not found".into());
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err("the NVRTC library (libnvrtc.so) was not found; is /usr/local/cuda/lib64 on LD_LIBRARY_PATH?".into());
        }
        let ctx = CudaContext::new(ordinal).map_err(err)?;
        // One stream does all the work (the null stream cannot be captured into a graph).
        // SAFETY: nothing here uses a second stream, so cudarc's cross-stream event tracking
        // has nothing to order and only adds API calls to every launch.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(err)?;
        let ptx = cudarc::nvrtc::compile_ptx(KERNELS.concat()).map_err(|e| format!("NVRTC: {e:?}"))?;
        let module = ctx.load_module(ptx).map_err(err)?;
        let mut funcs = HashMap::new();
        for name in KERNEL_NAMES {
            funcs.insert(name, module.load_function(name).map_err(err)?);
        }
        let total = ctx.total_mem().map_err(err)? as u64;
        let info = DeviceInfo { backend: "cuda", name: ctx.name().map_err(err)?, discrete: true, memory_bytes: total, f16: true, subgroups: true, max_binding_bytes: total };
        Ok(CudaBackend { _ctx: ctx, stream, funcs, weights: Mutex::new(HashMap::new()), graph: Mutex::new(None), mirrors: Mutex::new(HashMap::new()), profile: Mutex::new(Default::default()), uploaded: AtomicU64::new(0), resident: AtomicU64::new(0), budget: (total as f64 * WEIGHT_BUDGET_FRACTION) as u64, info })
    }

    /// Make sure every weight is resident; `Ok(true)` when something was uploaded (cold).
    fn ensure(&self, ws: &[&WeightArg]) -> Result<bool, String> {
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let mut cold = false;
        for w in ws {
            let fp = fingerprint(w.view.bytes);
            if map.get(&w.key).is_some_and(|r| r.fingerprint == fp) {
                continue;
            }
            let bytes = w.view.bytes.len() as u64;
            if self.resident.load(Ordering::SeqCst) + bytes > self.budget {
                return Err("weight budget exhausted".into());
            }
            let data = self.stream.clone_htod(w.view.bytes).map_err(err)?;
            if let Some(old) = map.insert(w.key, Resident { data, fingerprint: fp }) {
                self.resident.fetch_sub(old.data.len() as u64, Ordering::SeqCst);
            }
            self.resident.fetch_add(bytes, Ordering::SeqCst);
            self.uploaded.fetch_add(bytes, Ordering::SeqCst);
            cold = true;
        }
        Ok(cold)
    }

    /// Queue y (batch, rows) = x (batch, cols) . W^T on the stream.
    fn launch_matvec(&self, w: &WeightArg, weights: &HashMap<u64, Resident>, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>, batch: usize) -> Result<(), String> {
        let kind = kind(w.view.codec).ok_or("codec has no CUDA kernel")?;
        let f = &self.funcs["matvec"];
        let dev = &weights.get(&w.key).ok_or("weight not resident")?.data;
        let (rows, cols, batch) = (w.view.rows as i32, w.view.cols as i32, batch as i32);
        let rpw = rows_per_warp(w.view.rows, MATVEC_ROWS_PER_WARP);
        let rows_per_block = (MATVEC_THREADS / 32) * rpw;
        let rpw = rpw as i32;
        let cfg = LaunchConfig { grid_dim: ((rows as u32).div_ceil(rows_per_block), batch as u32, 1), block_dim: (MATVEC_THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut b = self.stream.launch_builder(f);
        b.arg(dev).arg(&kind).arg(x).arg(y).arg(&rows).arg(&cols).arg(&batch).arg(&rpw);
        // SAFETY: the kernel reads rows * row_bytes weight bytes, batch * cols floats of x and
        // writes batch * rows floats of y; all three buffers were sized for exactly that.
        unsafe { b.launch(cfg) }.map_err(err)?;
        Ok(())
    }

    fn supported(ws: &[&WeightArg]) -> bool {
        ws.iter().all(|w| kind(w.view.codec).is_some() && w.view.cols % 32 == 0 && w.view.rows < i32::MAX as usize && w.view.cols < i32::MAX as usize)
    }

    /// Run `body` (which queues work and returns host results); map errors to `Failed`.
    fn run(&self, ws: &[&WeightArg], body: impl FnOnce(&HashMap<u64, Resident>) -> Result<Vec<Vec<f32>>, String>, outs: &mut [&mut [f32]]) -> DeviceOutcome {
        if !Self::supported(ws) {
            return DeviceOutcome::Declined("codec or shape without a CUDA kernel");
        }
        let cold = match self.ensure(ws) {
            Ok(c) => c,
            Err(e) if e.contains("budget") => return DeviceOutcome::Declined("weight budget exhausted"),
            Err(e) => return DeviceOutcome::Failed(e),
        };
        let map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        match body(&map) {
            Ok(results) => {
                for (o, r) in outs.iter_mut().zip(results) {
                    o.copy_from_slice(&r);
                }
                DeviceOutcome::Completed { cold }
            }
            Err(e) => DeviceOutcome::Failed(e),
        }
    }
}

impl Backend for CudaBackend {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn is_resident(&self, key: u64) -> bool {
        self.weights.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&key)
    }

    fn matmul(&self, job: &MatmulJob, out: &mut [f32]) -> DeviceOutcome {
        let rows = job.w.view.rows;
        self.run(
            &[&job.w],
            |map| {
                let x = self.stream.clone_htod(job.x).map_err(err)?;
                let mut y = self.stream.alloc_zeros::<f32>(job.batch * rows).map_err(err)?;
                self.launch_matvec(&job.w, map, &x, &mut y, job.batch)?;
                Ok(vec![self.stream.clone_dtoh(&y).map_err(err)?])
            },
            &mut [out],
        )
    }

    fn matmul_many(&self, job: &MultiMatmulJob, outs: &mut [&mut [f32]]) -> DeviceOutcome {
        let ws: Vec<&WeightArg> = job.ws.iter().collect();
        self.run(
            &ws,
            |map| {
                let x = self.stream.clone_htod(job.x).map_err(err)?;
                let mut ys = Vec::new();
                for w in &job.ws {
                    let mut y = self.stream.alloc_zeros::<f32>(job.batch * w.view.rows).map_err(err)?;
                    self.launch_matvec(w, map, &x, &mut y, job.batch)?;
                    ys.push(y);
                }
                ys.iter().map(|y| self.stream.clone_dtoh(y).map_err(err)).collect()
            },
            outs,
        )
    }

    fn ffn(&self, job: &FfnJob, out: &mut [f32]) -> DeviceOutcome {
        if job.act != Activation::Silu {
            return DeviceOutcome::Declined("only the SiLU FFN has a CUDA kernel");
        }
        let ff = job.gate.view.rows;
        self.run(
            &[&job.gate, &job.up, &job.down],
            |map| {
                let x = self.stream.clone_htod(job.x).map_err(err)?;
                let mut g = self.stream.alloc_zeros::<f32>(job.batch * ff).map_err(err)?;
                let mut u = self.stream.alloc_zeros::<f32>(job.batch * ff).map_err(err)?;
                self.launch_matvec(&job.gate, map, &x, &mut g, job.batch)?;
                self.launch_matvec(&job.up, map, &x, &mut u, job.batch)?;
                let n = (job.batch * ff) as i32;
                let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                let mut b = self.stream.launch_builder(&self.funcs["silu_mul"]);
                b.arg(&mut g).arg(&u).arg(&n);
                // SAFETY: g and u hold n floats each.
                unsafe { b.launch(cfg) }.map_err(err)?;
                let mut y = self.stream.alloc_zeros::<f32>(job.batch * job.down.view.rows).map_err(err)?;
                self.launch_matvec(&job.down, map, &g, &mut y, job.batch)?;
                Ok(vec![self.stream.clone_dtoh(&y).map_err(err)?])
            },
            &mut [out],
        )
    }

    fn token_graph(&self, job: &TokenGraphJob, logits: &mut [f32]) -> DeviceOutcome {
        self.run_graph(job, logits)
    }

    fn pull_kv(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        self.pull_rows(seq, from, to, host)
    }

    fn reset_sequence(&self, seq: u64) {
        self.mirrors.lock().unwrap_or_else(|e| e.into_inner()).remove(&seq);
    }

    fn upload_bandwidth(&self) -> Option<f64> {
        // 64 MiB through a pageable host buffer, timed around a synchronize.
        let host = vec![0x5Au8; 64 << 20];
        let t = std::time::Instant::now();
        let dev = self.stream.clone_htod(&host).ok()?;
        self.stream.synchronize().ok()?;
        let secs = t.elapsed().as_secs_f64();
        drop(dev);
        Some(host.len() as f64 / secs)
    }

    fn weight_budget(&self) -> u64 {
        self.budget
    }

    fn graph_profile(&self) -> Option<super::backend::GraphProfile> {
        Some(self.profile.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    fn resident_bytes(&self) -> u64 {
        self.resident.load(Ordering::SeqCst)
    }

    fn upload_bytes(&self) -> u64 {
        self.uploaded.load(Ordering::SeqCst)
    }
}
