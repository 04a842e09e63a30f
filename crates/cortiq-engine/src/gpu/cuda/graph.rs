//! The whole-token decode graph on CUDA (SPEC section 8): embedding lookup, every layer
//! (norm, QKV, RoPE, KV-mirror append, attention over the mirror, output projection,
//! residual, FFN, residual), final norm and head queued on one stream with no host round
//! trip; one readback of the logits. Token and position travel through device memory, so
//! the launch sequence is the same for every token.

use super::{err, kind, CudaBackend, Resident};
use crate::gpu::backend::{DeviceOutcome, TokenGraphJob, WeightArg};
use crate::gpu::memory::model_key;
use crate::kv::KvCache;
use crate::model::llama::{Llama, Weight};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaSlice, LaunchConfig, PushKernelArg};
use half::slice::HalfFloatSliceExt;
use std::collections::HashMap;

/// Positions per split-attention block (`ATT_CHUNK` in graph.cu).
const ATT_CHUNK: usize = 64;
/// Largest head size the attention kernels handle.
const MAX_HEAD_DIM: usize = 256;

/// Device buffers of one model's graph: norms and per-token scratch.
pub(super) struct ModelGraph {
    /// Identifies the model the buffers were built for (its mapped file).
    model_key: u64,
    /// Per layer: (attn_norm, ffn_norm), (n_embd) each.
    norms: Vec<(CudaSlice<f32>, CudaSlice<f32>)>,
    out_norm: CudaSlice<f32>,
    /// [token, pos]
    params: CudaSlice<i32>,
    x: CudaSlice<f32>,      // (n_embd) residual stream
    xn: CudaSlice<f32>,     // (n_embd) normed
    q: CudaSlice<f32>,      // (n_head * head_dim)
    k: CudaSlice<f32>,      // (n_head_kv * head_dim)
    v: CudaSlice<f32>,      // (n_head_kv * head_dim)
    att: CudaSlice<f32>,    // (n_head * head_dim)
    proj: CudaSlice<f32>,   // (n_embd)
    h: CudaSlice<f32>,      // (n_ff) silu(gate) * up
    logits: CudaSlice<f32>, // (vocab)
    /// Split-attention partials (n_head, splits, head_dim + 2), sized for `splits`.
    part: CudaSlice<f32>,
    splits: usize,
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

fn all_weights(m: &Llama) -> Vec<Weight> {
    let mut ws: Vec<Weight> = m.layers.iter().flat_map(|l| [l.wq, l.wk, l.wv, l.wo, l.gate, l.up, l.down]).collect();
    ws.push(m.output);
    ws.push(m.embed);
    ws
}

/// Why this model cannot run as a graph, if it cannot.
pub(super) fn unsupported(m: &Llama, capacity: usize) -> Option<&'static str> {
    if m.cfg.family != crate::model::Family::Llama {
        return Some("cannot build a graph: only the llama block has CUDA graph kernels");
    }
    if m.cfg.head_dim > MAX_HEAD_DIM || capacity >= i32::MAX as usize / m.cfg.kv_dim().max(1) {
        return Some("cannot build a graph: head size or context beyond the attention kernels");
    }
    if kind(m.embed.codec).is_none() {
        return Some("cannot build a graph: embedding codec has no CUDA decoder");
    }
    if all_weights(m).iter().any(|w| kind(w.codec).is_none() || w.cols % 32 != 0) {
        return Some("cannot build a graph: a weight codec has no CUDA kernel");
    }
    if !m.cfg.head_dim.is_multiple_of(2) {
        return Some("cannot build a graph: odd head size");
    }
    None
}

fn grid(n: usize, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u32).div_ceil(threads), 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

impl CudaBackend {
    fn build_graph(&self, m: &Llama, capacity: usize, model_key: u64) -> Result<ModelGraph, String> {
        let splits = capacity.div_ceil(ATT_CHUNK);
        let c = &m.cfg;
        let s = &self.stream;
        let zeros = |n: usize| s.alloc_zeros::<f32>(n).map_err(err);
        let mut norms = Vec::new();
        for l in &m.layers {
            norms.push((s.clone_htod(&l.attn_norm).map_err(err)?, s.clone_htod(&l.ffn_norm).map_err(err)?));
        }
        Ok(ModelGraph {
            model_key,
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
            h: zeros(c.n_ff)?,
            logits: zeros(c.vocab)?,
            part: zeros(c.n_head * splits * (c.head_dim + 2))?,
            splits,
        })
    }

    /// A mirror for `seq` holding exactly `pos` rows, seeded from the host cache if needed.
    fn mirror_at(&self, mirrors: &mut HashMap<u64, Mirror>, job: &TokenGraphJob) -> Result<(), String> {
        let c = &job.model.cfg;
        let (kvd, cap) = (c.kv_dim(), job.host_kv.capacity());
        if let std::collections::hash_map::Entry::Vacant(slot) = mirrors.entry(job.seq) {
            let mut k = Vec::new();
            let mut v = Vec::new();
            for _ in 0..c.n_layer {
                k.push(self.stream.alloc_zeros::<f32>(cap * kvd).map_err(err)?);
                v.push(self.stream.alloc_zeros::<f32>(cap * kvd).map_err(err)?);
            }
            slot.insert(Mirror { k, v, len: 0, captured: None });
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
        let mut graph = self.graph.lock().unwrap_or_else(|e| e.into_inner());
        let mut mirrors = self.mirrors.lock().unwrap_or_else(|e| e.into_inner());
        let splits = job.host_kv.capacity().div_ceil(ATT_CHUNK);
        let key = model_key(m);
        let mut cold = false;
        if graph.as_ref().is_none_or(|g| g.model_key != key || g.splits < splits) {
            // Every weight resident and proven by its fingerprint, once per graph build (not
            // per token: that would hash every tensor on the hot path).
            cold = match self.ensure(&refs) {
                Ok(c) => c,
                Err(e) if e.contains("budget") => return DeviceOutcome::Declined("cannot build a graph: weights exceed the budget"),
                Err(e) => return DeviceOutcome::Failed(e),
            };
            // Captured launch sequences point at the old buffers: drop them with the buffers.
            mirrors.values_mut().for_each(|mi| mi.captured = None);
            match self.build_graph(m, job.host_kv.capacity(), key) {
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
            p.tokens += 1;
            p.host += t1 - t0;
            p.tail += t1.elapsed();
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

    /// Queue every kernel of one token (token and position are read from `g.params`):
    /// per layer qkv, rope_store, attention, o-proj, add_rmsnorm, gate_up_silu, down, and
    /// the residual add fused into the next layer's norm. `args` is `all_weights` order;
    /// `capacity` sizes the split-attention grid.
    fn queue_token(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &mut Mirror, capacity: usize) -> Result<(), String> {
        let c = &m.cfg;
        let s = &self.stream;
        let f = |n: &str| &self.funcs[n];
        let dev = |w: &WeightArg| map.get(&w.key).map(|r| &r.data).ok_or_else(|| "weight not resident".to_string());
        let kd = |w: &WeightArg| kind(w.view.codec).expect("checked by unsupported()");
        let (d, ff) = (c.n_embd as i32, c.n_ff as i32);
        let (nh, nkv, hd, rot) = (c.n_head as i32, c.n_head_kv as i32, c.head_dim as i32, c.rope_dims as i32);
        let (qd, kvd) = (c.q_dim() as i32, c.kv_dim() as i32);
        let (eps, base, neox) = (c.eps, c.rope_base, c.rope_neox as i32);
        let scale = 1.0f32 / (c.head_dim as f32).sqrt();
        let pos_ptr = g.params.slice(1..2);
        let tok_ptr = g.params.slice(0..1);
        let embed = &args[args.len() - 1];
        let ekind = kd(embed);
        let warps = |rows: usize| LaunchConfig { grid_dim: ((rows as u32).div_ceil(8), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let norm_cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
        let splits = capacity.div_ceil(ATT_CHUNK) as i32;
        let split_cfg = LaunchConfig { grid_dim: (c.n_head as u32, splits as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let combine_cfg = LaunchConfig { grid_dim: (c.n_head as u32, 1, 1), block_dim: (c.head_dim.min(256) as u32, 1, 1), shared_mem_bytes: 0 };
        let part_splits = g.splits as i32;
        let rope_threads = (c.n_head + c.n_head_kv) * c.rope_dims / 2 + c.kv_dim();
        // SAFETY (every launch below): buffer sizes are the model's geometry, allocated in
        // build_graph / mirror_at for exactly these shapes; positions are bounded by the
        // mirror capacity (the session checks it before the call).
        unsafe {
            s.launch_builder(f("embed_row")).arg(dev(embed)?).arg(&tok_ptr).arg(&mut g.x).arg(&d).arg(&ekind).launch(grid(c.n_embd, 256)).map_err(err)?;
            s.launch_builder(f("rmsnorm")).arg(&g.x).arg(&g.norms[0].0).arg(&mut g.xn).arg(&d).arg(&eps).launch(norm_cfg).map_err(err)?;
        }
        for li in 0..c.n_layer {
            let w = &args[li * 7..li * 7 + 7];
            let next_norm = if li + 1 < c.n_layer { &g.norms[li + 1].0 } else { &g.out_norm };
            unsafe {
                s.launch_builder(f("qkv"))
                    .arg(dev(&w[0])?).arg(dev(&w[1])?).arg(dev(&w[2])?).arg(&kd(&w[0])).arg(&kd(&w[1])).arg(&kd(&w[2]))
                    .arg(&g.xn).arg(&mut g.q).arg(&mut g.k).arg(&mut g.v).arg(&qd).arg(&kvd).arg(&kvd).arg(&d)
                    .launch(warps(c.q_dim() + 2 * c.kv_dim())).map_err(err)?;
                s.launch_builder(f("rope_store"))
                    .arg(&mut g.q).arg(&mut g.k).arg(&g.v).arg(&mut mirror.k[li]).arg(&mut mirror.v[li])
                    .arg(&nh).arg(&nkv).arg(&hd).arg(&rot).arg(&pos_ptr).arg(&base).arg(&neox)
                    .launch(grid(rope_threads, 128)).map_err(err)?;
                s.launch_builder(f("attn_split")).arg(&g.q).arg(&mirror.k[li]).arg(&mirror.v[li]).arg(&mut g.part).arg(&nh).arg(&nkv).arg(&hd).arg(&pos_ptr).arg(&scale).arg(&part_splits).launch(split_cfg).map_err(err)?;
                s.launch_builder(f("attn_combine")).arg(&g.part).arg(&mut g.att).arg(&hd).arg(&pos_ptr).arg(&part_splits).launch(combine_cfg).map_err(err)?;
            }
            self.launch_matvec(&w[3], map, &g.att, &mut g.proj, 1)?;
            let rpw = super::rows_per_warp(c.n_ff, 2);
            unsafe {
                s.launch_builder(f("add_rmsnorm")).arg(&mut g.x).arg(&g.proj).arg(&g.norms[li].1).arg(&mut g.xn).arg(&d).arg(&eps).launch(norm_cfg).map_err(err)?;
                s.launch_builder(f("gate_up_silu")).arg(dev(&w[4])?).arg(dev(&w[5])?).arg(&kd(&w[4])).arg(&kd(&w[5])).arg(&g.xn).arg(&mut g.h).arg(&ff).arg(&d).arg(&(rpw as i32)).launch(warps(c.n_ff.div_ceil(rpw as usize))).map_err(err)?;
            }
            self.launch_matvec(&w[6], map, &g.h, &mut g.proj, 1)?;
            unsafe {
                s.launch_builder(f("add_rmsnorm")).arg(&mut g.x).arg(&g.proj).arg(next_norm).arg(&mut g.xn).arg(&d).arg(&eps).launch(norm_cfg).map_err(err)?;
            }
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
