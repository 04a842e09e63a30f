//! The whole-token decode graph on CUDA (SPEC section 8): embedding lookup, every layer
//! (norm, QKV, RoPE, KV-mirror append, attention over the mirror, output projection,
//! residual, FFN, residual), final norm and head queued on one stream with no host round
//! trip; one readback of the logits. Token and position travel through device memory, so
//! the launch sequence is the same for every token.

use super::{err, kernel_name, CudaBackend, Resident};
use crate::gpu::backend::{DeviceOutcome, TokenGraphJob, WeightArg};
use crate::kv::KvCache;
use crate::model::llama::{Llama, Weight};
use cortiq_core::Codec;
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaSlice, LaunchConfig, PushKernelArg};
use half::slice::HalfFloatSliceExt;
use std::collections::HashMap;

/// Positions the attention kernel can hold in shared memory (48 KiB per block, less its
/// static reduction buffer).
pub const MAX_GRAPH_POSITIONS: usize = 12_000;

/// Device buffers of one model's graph: norms and per-token scratch.
pub(super) struct ModelGraph {
    /// Identifies the model the buffers were built for (its mapped file).
    model_key: u64,
    /// Per layer: (attn_norm, ffn_norm), (n_embd) each.
    norms: Vec<(CudaSlice<f32>, CudaSlice<f32>)>,
    out_norm: CudaSlice<f32>,
    /// [token, pos]
    params: CudaSlice<i32>,
    x: CudaSlice<f32>,     // (n_embd) residual stream
    xn: CudaSlice<f32>,    // (n_embd) normed
    q: CudaSlice<f32>,     // (n_head * head_dim)
    k: CudaSlice<f32>,     // (n_head_kv * head_dim)
    v: CudaSlice<f32>,     // (n_head_kv * head_dim)
    att: CudaSlice<f32>,   // (n_head * head_dim)
    proj: CudaSlice<f32>,  // (n_embd)
    gate: CudaSlice<f32>,  // (n_ff)
    up: CudaSlice<f32>,    // (n_ff)
    logits: CudaSlice<f32>, // (vocab)
}

/// A captured CUDA graph of one token's launches.
pub(super) struct CapturedToken(CudaGraph);

// SAFETY: CUDA graph objects are not internally synchronized; this one is only touched
// while the backend's mirror lock is held, which serializes every access.
unsafe impl Send for CapturedToken {}

/// A sequence's KV mirror: per layer K and V rows of kv_dim floats, and the token's launch
/// sequence captured as a CUDA graph against these buffers (replayed for every token).
pub(super) struct Mirror {
    k: Vec<CudaSlice<f32>>,
    v: Vec<CudaSlice<f32>>,
    len: usize,
    captured: Option<CapturedToken>,
}

fn model_key(m: &Llama) -> u64 {
    m.file.tensor_data(&m.file.tensors[0]).as_ptr() as u64
}

/// Which `embed_row` decoder a codec uses.
fn embed_kind(c: Codec) -> Option<i32> {
    Some(match c {
        Codec::Q4_0 | Codec::Q4Tiled => 0,
        Codec::Q4_1 => 1,
        Codec::Q8_0 => 2,
        Codec::F16 => 3,
        Codec::F32 => 4,
        _ => return None,
    })
}

fn all_weights(m: &Llama) -> Vec<Weight> {
    let mut ws: Vec<Weight> = m.layers.iter().flat_map(|l| [l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down]).collect();
    ws.push(m.output);
    ws.push(m.embed);
    ws
}

/// Why this model cannot run as a graph, if it cannot.
pub(super) fn unsupported(m: &Llama, capacity: usize) -> Option<&'static str> {
    if capacity > MAX_GRAPH_POSITIONS {
        return Some("cannot build a graph: context longer than the attention kernel holds");
    }
    if embed_kind(m.embed.codec).is_none() {
        return Some("cannot build a graph: embedding codec has no CUDA decoder");
    }
    if all_weights(m).iter().any(|w| kernel_name(w.codec).is_none() || w.cols % 32 != 0) {
        return Some("cannot build a graph: a weight codec has no CUDA kernel");
    }
    if m.cfg.head_dim % 2 != 0 {
        return Some("cannot build a graph: odd head size");
    }
    None
}

fn grid(n: usize, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u32).div_ceil(threads), 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

impl CudaBackend {
    fn build_graph(&self, m: &Llama) -> Result<ModelGraph, String> {
        let c = &m.cfg;
        let s = &self.stream;
        let zeros = |n: usize| s.alloc_zeros::<f32>(n).map_err(err);
        let mut norms = Vec::new();
        for l in &m.layers {
            norms.push((s.clone_htod(&l.attn_norm).map_err(err)?, s.clone_htod(&l.ffn_norm).map_err(err)?));
        }
        Ok(ModelGraph {
            model_key: model_key(m),
            norms,
            out_norm: s.clone_htod(&m.output_norm).map_err(err)?,
            params: s.alloc_zeros::<i32>(2).map_err(err)?,
            x: zeros(c.n_embd)?,
            xn: zeros(c.n_embd)?,
            q: zeros(c.q_dim())?,
            k: zeros(c.kv_dim())?,
            v: zeros(c.kv_dim())?,
            att: zeros(c.q_dim())?,
            proj: zeros(c.n_embd)?,
            gate: zeros(c.n_ff)?,
            up: zeros(c.n_ff)?,
            logits: zeros(c.vocab)?,
        })
    }

    /// A mirror for `seq` holding exactly `pos` rows, seeded from the host cache if needed.
    fn mirror_at(&self, mirrors: &mut HashMap<u64, Mirror>, job: &TokenGraphJob) -> Result<(), String> {
        let c = &job.model.cfg;
        let (kvd, cap) = (c.kv_dim(), job.host_kv.capacity());
        if !mirrors.contains_key(&job.seq) {
            let mut k = Vec::new();
            let mut v = Vec::new();
            for _ in 0..c.n_layer {
                k.push(self.stream.alloc_zeros::<f32>(cap * kvd).map_err(err)?);
                v.push(self.stream.alloc_zeros::<f32>(cap * kvd).map_err(err)?);
            }
            mirrors.insert(job.seq, Mirror { k, v, len: 0, captured: None });
        }
        let mirror = mirrors.get_mut(&job.seq).expect("inserted above");
        if mirror.len != job.pos {
            // Seed from the host cache: a zero state is never assumed.
            let n = job.pos * kvd;
            let mut buf = vec![0f32; n];
            for l in 0..c.n_layer {
                job.host_kv.keys(l, job.pos).convert_to_f32_slice(&mut buf);
                self.stream.memcpy_htod(&buf, &mut mirror.k[l].slice_mut(0..n)).map_err(err)?;
                job.host_kv.values(l, job.pos).convert_to_f32_slice(&mut buf);
                self.stream.memcpy_htod(&buf, &mut mirror.v[l].slice_mut(0..n)).map_err(err)?;
            }
            mirror.len = job.pos;
        }
        Ok(())
    }

    /// Run one token through the graph; `logits` is written only on success.
    pub(super) fn run_graph(&self, job: &TokenGraphJob, logits: &mut [f32]) -> DeviceOutcome {
        let m = job.model;
        if let Some(why) = unsupported(m, job.host_kv.capacity()) {
            return DeviceOutcome::Declined(why);
        }
        let weights = all_weights(m);
        let args: Vec<WeightArg> = weights.iter().map(|w| m.weight_arg(w)).collect();
        let refs: Vec<&WeightArg> = args.iter().collect();
        let cold = match self.ensure(&refs) {
            Ok(c) => c,
            Err(e) if e.contains("budget") => return DeviceOutcome::Declined("cannot build a graph: weights exceed the budget"),
            Err(e) => return DeviceOutcome::Failed(e),
        };
        let mut graph = self.graph.lock().unwrap_or_else(|e| e.into_inner());
        let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        if graph.as_ref().is_none_or(|g| g.model_key != model_key(m)) {
            // Captured launch sequences point at the old buffers: drop them with the buffers.
            mirrors.values_mut().for_each(|mi| mi.captured = None);
            match self.build_graph(m) {
                Ok(g) => *graph = Some(g),
                Err(e) => return DeviceOutcome::Failed(e),
            }
        }
        let g = graph.as_mut().expect("built above");
        let map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        let result = self.mirror_at(&mut mirrors, job).and_then(|()| {
            let mirror = mirrors.get_mut(&job.seq).expect("mirror_at made it");
            let t0 = std::time::Instant::now();
            self.stream.memcpy_htod(&[job.token as i32, job.pos as i32], &mut g.params).map_err(err)?;
            if mirror.captured.is_none() {
                mirror.captured = self.capture(m, &args, &map, g, mirror)?;
            }
            match &mirror.captured {
                Some(c) => c.0.launch().map_err(err)?,
                None => self.queue_token(m, &args, &map, g, mirror, job.host_kv.capacity())?,
            }
            let t1 = std::time::Instant::now();
            let out = self.stream.clone_dtoh(&g.logits).map_err(err)?;
            let mut p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
            p.0 += 1;
            p.1 += t1 - t0;
            p.2 += t1.elapsed();
            mirror.len = job.pos + 1;
            Ok(out)
        });
        match result {
            Ok(out) => {
                logits.copy_from_slice(&out);
                DeviceOutcome::Completed { cold }
            }
            Err(e) => {
                mirrors.remove(&job.seq);
                DeviceOutcome::Failed(e)
            }
        }
    }

    /// Capture one token's launches into a CUDA graph (None if capture is not possible; the
    /// caller then queues the launches directly).
    fn capture(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror) -> Result<Option<CapturedToken>, String> {
        let capacity = mirror.k[0].len() / m.cfg.kv_dim().max(1);
        self.stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(err)?;
        let queued = self.queue_token(m, args, map, g, mirror, capacity);
        let graph = self.stream.end_capture(CUgraphInstantiate_flags(0)).map_err(err)?;
        queued?;
        Ok(graph.map(CapturedToken))
    }

    /// Queue every kernel of one token (token and position are read from `g.params`).
    /// `args` is `all_weights` order; `capacity` bounds the attention scores in shared memory.
    fn queue_token(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror, capacity: usize) -> Result<(), String> {
        let c = &m.cfg;
        let s = &self.stream;
        let f = |n: &str| &self.funcs[n];
        let (d, kvd, ff) = (c.n_embd as i32, c.kv_dim() as i32, c.n_ff as i32);
        let (nh, nkv, hd, rot) = (c.n_head as i32, c.n_head_kv as i32, c.head_dim as i32, c.rope_dims as i32);
        let (eps, base, neox) = (c.eps, c.rope_base, c.rope_neox as i32);
        let scale = 1.0f32 / (c.head_dim as f32).sqrt();
        let pos_ptr = g.params.slice(1..2);
        let tok_ptr = g.params.slice(0..1);
        let embed = &args[args.len() - 1];
        let kind = embed_kind(embed.view.codec).expect("checked by unsupported()");
        let edev = &map.get(&embed.key).ok_or("embedding not resident")?.data;
        // SAFETY (every launch below): buffer sizes are the model's geometry, allocated in
        // build_graph / mirror_at for exactly these shapes; positions are bounded by the
        // mirror capacity (checked by the session before the call).
        unsafe {
            s.launch_builder(f("embed_row")).arg(edev).arg(&tok_ptr).arg(&mut g.x).arg(&d).arg(&kind).launch(grid(c.n_embd, 256)).map_err(err)?;
        }
        let norm_cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
        let attn_cfg = LaunchConfig { grid_dim: (c.n_head as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: (capacity * 4) as u32 };
        for (li, (an, fnorm)) in g.norms.iter().enumerate() {
            let w = &args[li * 7..li * 7 + 7];
            unsafe {
                s.launch_builder(f("rmsnorm")).arg(&g.x).arg(an).arg(&mut g.xn).arg(&d).arg(&eps).launch(norm_cfg).map_err(err)?;
            }
            self.launch_matvec(&w[0], map, &g.xn, &mut g.q, 1)?;
            self.launch_matvec(&w[1], map, &g.xn, &mut g.k, 1)?;
            self.launch_matvec(&w[2], map, &g.xn, &mut g.v, 1)?;
            unsafe {
                s.launch_builder(f("rope")).arg(&mut g.q).arg(&nh).arg(&hd).arg(&rot).arg(&pos_ptr).arg(&base).arg(&neox).launch(grid(c.n_head * c.rope_dims / 2, 128)).map_err(err)?;
                s.launch_builder(f("rope")).arg(&mut g.k).arg(&nkv).arg(&hd).arg(&rot).arg(&pos_ptr).arg(&base).arg(&neox).launch(grid(c.n_head_kv * c.rope_dims / 2, 128)).map_err(err)?;
                s.launch_builder(f("kv_store")).arg(&g.k).arg(&g.v).arg(&mut mirror.k[li]).arg(&mut mirror.v[li]).arg(&pos_ptr).arg(&kvd).launch(grid(c.kv_dim(), 256)).map_err(err)?;
                s.launch_builder(f("attention")).arg(&g.q).arg(&mirror.k[li]).arg(&mirror.v[li]).arg(&mut g.att).arg(&nh).arg(&nkv).arg(&hd).arg(&pos_ptr).arg(&scale).launch(attn_cfg).map_err(err)?;
            }
            self.launch_matvec(&w[3], map, &g.att, &mut g.proj, 1)?;
            unsafe {
                s.launch_builder(f("add_inplace")).arg(&mut g.x).arg(&g.proj).arg(&d).launch(grid(c.n_embd, 256)).map_err(err)?;
                s.launch_builder(f("rmsnorm")).arg(&g.x).arg(fnorm).arg(&mut g.xn).arg(&d).arg(&eps).launch(norm_cfg).map_err(err)?;
            }
            self.launch_matvec(&w[4], map, &g.xn, &mut g.gate, 1)?;
            self.launch_matvec(&w[5], map, &g.xn, &mut g.up, 1)?;
            unsafe {
                s.launch_builder(f("silu_mul")).arg(&mut g.gate).arg(&g.up).arg(&ff).launch(grid(c.n_ff, 256)).map_err(err)?;
            }
            self.launch_matvec(&w[6], map, &g.gate, &mut g.proj, 1)?;
            unsafe {
                s.launch_builder(f("add_inplace")).arg(&mut g.x).arg(&g.proj).arg(&d).launch(grid(c.n_embd, 256)).map_err(err)?;
            }
        }
        unsafe {
            s.launch_builder(f("rmsnorm")).arg(&g.x).arg(&g.out_norm).arg(&mut g.xn).arg(&d).arg(&eps).launch(norm_cfg).map_err(err)?;
        }
        self.launch_matvec(&args[args.len() - 2], map, &g.xn, &mut g.logits, 1)
    }

    /// Mirror rows from..to of `seq` into the host cache layout.
    pub(super) fn pull_rows(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        let mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        let mirror = mirrors.get(&seq).ok_or("no KV mirror for this sequence")?;
        if to > mirror.len {
            return Err(format!("the mirror holds {} rows, {to} were asked for", mirror.len));
        }
        let d = host.kv_dim();
        for l in 0..host.n_layer() {
            let k = self.stream.clone_dtoh(&mirror.k[l].slice(from * d..to * d)).map_err(err)?;
            let v = self.stream.clone_dtoh(&mirror.v[l].slice(from * d..to * d)).map_err(err)?;
            host.write(l, from, &k, &v);
        }
        host.set_len(to);
        Ok(())
    }
}
