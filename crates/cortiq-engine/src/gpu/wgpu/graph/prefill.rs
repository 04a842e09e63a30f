//! The batched prefill graph on wgpu (SPEC section 9): a chunk of prompt rows through every
//! layer of a llama-family model in ONE command buffer with ONE compute pass (Gemma 3's block:
//! `gemma.rs` plans its chunk into the same frame). Per layer: the
//! RMSNorm of every row (the previous layer's down projection added into the residual stream
//! first), the Q/K/V projections as tiled GEMMs (`gemm.wgsl`; a matvec per row below
//! `GEMM_MIN_BATCH` rows), RoPE with the KV-mirror append at each row's position, causal
//! attention of every row over the mirror (`attn_rows.wgsl`), the O projection, the norm with
//! the residual add, gate and up, SiLU(gate) * up, down. Then the last row alone: the final
//! norm (its residual added), the head and, where asked for, the argmax; or, for a device prefix of the
//! leading layers, every row's residual stream (its last down projection added) for the host. The embedding rows are decoded on the
//! host and written with the chunk. The dispatches and their bind groups are recorded once per
//! (sequence, chunk rows) and re-encoded for the next chunk of that many rows (the position
//! travels in the chunk's uniform block). Where the adapter has packed int8 dot products and
//! every layer matrix an int8 kernel, each stage's input rows are quantized to int8 first (down's
//! with SiLU(gate) * up folded into the quantizer) and the GEMMs take them (`gemm_q8.wgsl`, or
//! `gemm_coop.wgsl` on the adapter's matrix units where it offers them;
//! `CMF_WGPU_PREFILL_INT8=0` keeps f32). On the matrix units (f16 operands) SPEC section 6's
//! guard applies: the quantizers and the prompt attention set a word where a value they round
//! to f16 is past its range (a weight past it keeps its GEMM off the units), and the chunk
//! then runs again on the int8 dot products and the f32 attention.

use super::super::plan::{self, Grid, MatvecIo, Params, Planned, Uniform};
use super::super::{Resident, WgpuBackend};
use super::super::{int8_layers, Variant, XMode};
use super::{graph_weights, quant_slot, quantize_rows, relabel, step_block, At, StepBlock, ModelGraph, NormBlock, Readback, Recorded, QUANT_PLAIN, QUANT_SILU};
use crate::gpu::backend::{DeviceOutcome, GraphReadback, PrefillGraphJob, WeightArg};
use crate::model::Family;
use std::collections::HashMap;

/// Prompt rows one prefill submission takes at most (the session's prefill chunk).
pub(super) const PREFILL_ROWS: usize = crate::pipeline::PREFILL_CHUNK;

/// The prefill graph's dispatches for chunks of `rows` rows, bound to a sequence's mirror
/// (recorded on the first such chunk, re-encoded for the next): on the matrix units where
/// `f16`, and whether any of them sets the f16 guard's word.
pub(in crate::gpu::wgpu) struct PrefillPlan {
    rows: usize,
    f16: bool,
    guarded: bool,
    rec: Recorded,
}

/// Device buffers of the batched prefill graph, for up to `PREFILL_ROWS` prompt rows.
pub(in crate::gpu::wgpu) struct PrefillBuffers {
    pub(super) x: wgpu::Buffer,    // (rows, n_embd) residual stream
    pub(super) xn: wgpu::Buffer,   // (rows, n_embd) normed
    pub(super) q: wgpu::Buffer,    // (rows, n_head * head_dim), RoPE applied in place
    pub(super) k: wgpu::Buffer,    // (rows, kv_dim)
    pub(super) v: wgpu::Buffer,    // (rows, kv_dim)
    pub(super) att: wgpu::Buffer,  // (rows, n_head * head_dim)
    pub(super) o: wgpu::Buffer,    // (rows, n_embd) O and down projections, added into x by the next norm
    pub(super) g: wgpu::Buffer,    // (rows, n_ff) gate, then SiLU(gate) * up
    pub(super) u: wgpu::Buffer,    // (rows, n_ff)
    pub(super) last: wgpu::Buffer, // (n_embd) the last row, normed for the head
    /// The chunk's `Step` block: the first row's position and the head geometry.
    pub(super) step: wgpu::Buffer,
    /// The same for a sliding-window layer (its RoPE base and window; `gemma::local`), where
    /// the model has such layers.
    pub(super) step_local: Option<wgpu::Buffer>,
    /// (1) the f16 guard's word (f16_guard.wgsl), zeroed before a chunk, and where it is
    /// read back.
    bad: wgpu::Buffer,
    bad_read: wgpu::Buffer,
    /// Where the GEMMs take int8 activations (`WgpuBackend::int8_prefill`): each stage's
    /// input quantized into (rows, widest / 32 units of 32 bytes) and (rows, widest / 32
    /// units of (d, d * sum, sum, 0)).
    int8: Option<(wgpu::Buffer, wgpu::Buffer)>,
}

impl WgpuBackend {
    /// The prefill buffers for `m`, whose graph runs its first `layers` layers; int8 scratch
    /// where its prompt GEMMs take int8 activations (asked for, the adapter has the int8 dot
    /// product, every matrix of those layers has an int8 kernel).
    fn prefill_buffers(&self, m: &crate::model::llama::Llama, layers: usize) -> PrefillBuffers {
        let c = &m.cfg;
        let n = PREFILL_ROWS;
        let buf = |label: &str, floats: usize| self.storage_buf(label, floats);
        let step_buf = |label: &str| self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: std::mem::size_of::<super::StepBlock>() as u64, usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        PrefillBuffers {
            x: buf("prefill-x", n * c.n_embd),
            xn: buf("prefill-xn", n * c.n_embd),
            q: buf("prefill-q", n * c.q_dim()),
            k: buf("prefill-k", n * c.kv_dim()),
            v: buf("prefill-v", n * c.kv_dim()),
            att: buf("prefill-att", n * c.q_dim()),
            o: buf("prefill-o", n * c.n_embd),
            g: buf("prefill-gate", n * c.n_ff),
            u: buf("prefill-up", n * c.n_ff),
            last: buf("prefill-last", c.n_embd),
            int8: (c.family == Family::Llama && self.int8_prefill && self.info.q8_matvec && int8_layers(&m.layers[..layers])).then(|| {
                let widest = c.n_embd.max(c.n_ff).max(c.q_dim());
                (buf("prefill-xq", n * widest / 4), buf("prefill-xd", n * widest / 8))
            }),
            step: step_buf("prefill-step"),
            step_local: c.sliding.map(|_| step_buf("prefill-step-local")),
            bad: buf("prefill-f16-guard", 1),
            bad_read: self.ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("prefill-f16-guard-read"), size: 4, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false }),
        }
    }

    /// Run a prompt chunk through the batched prefill graph; `out` (the last position's) is
    /// written only on success. Where the f16 guard's word comes back set, the chunk runs
    /// again without the matrix units, rewriting the same mirror rows.
    pub(in crate::gpu::wgpu) fn run_prefill(&self, job: &PrefillGraphJob, out: GraphReadback) -> DeviceOutcome {
        let m = job.model;
        let c = &m.cfg;
        let rows = job.tokens.len();
        if rows == 0 || rows > PREFILL_ROWS {
            return DeviceOutcome::Declined("prompt chunk outside the prefill graph's 1..=256 rows");
        }
        if job.pos + rows > job.host_kv.capacity() {
            return DeviceOutcome::Declined("prompt chunk beyond the context size");
        }
        if job.tokens.iter().any(|&t| t as usize >= c.vocab) {
            return DeviceOutcome::Declined("prompt token outside the vocabulary");
        }
        let widest = (PREFILL_ROWS * c.n_embd.max(c.n_ff).max(c.q_dim()) * 4) as u64;
        if widest > self.ctx.max_binding {
            return DeviceOutcome::Declined("prefill graph: a chunk's activations exceed the adapter's largest binding");
        }
        let kind = Readback::of(&out, c.vocab);
        let at = At { model: m, seq: job.seq, pos: job.pos, host_kv: job.host_kv, layers: job.layers };
        self.on_graph(&at, rows, out, |g, mirror, map| {
            let ts = std::time::Instant::now();
            if g.prefill.is_none() {
                g.prefill = Some(self.prefill_buffers(m, g.layers));
            }
            let g: &ModelGraph = g;
            let pb = g.prefill.as_ref().expect("made above");
            let mut x = vec![0f32; rows * c.n_embd];
            m.embed_rows(job.tokens, &mut x);
            let step = StepBlock { rows: rows as u32, ..step_block(m, job.pos, 0, false) };
            self.ctx.queue.write_buffer(&pb.step, 0, bytemuck::bytes_of(&step));
            if let (Some(buf), Some(local)) = (&pb.step_local, super::gemma::local(m, step)) {
                self.ctx.queue.write_buffer(buf, 0, bytemuck::bytes_of(&local));
            }
            // Gemma's prompts take the f32 GEMMs and attention (no matrix units, no guard).
            let mut f16 = c.family == Family::Llama && (self.info.matrix_units || self.f16_guard_forced);
            loop {
                // The residual stream: written again for a rerun (the chunk adds into it).
                self.ctx.queue.write_buffer(&pb.x, 0, bytemuck::cast_slice(&x));
                if mirror.prefill.as_ref().is_none_or(|p| p.rows != rows || p.f16 != f16) {
                    let args: Vec<WeightArg> = graph_weights(m, g.layers).iter().map(|w| m.weight_arg(w)).collect();
                    let mut params = Params::default();
                    let (plan, guarded) = match c.family {
                        Family::Llama => self.plan_prefill(m, &args, map, g, pb, &mirror.k, &mirror.v, rows, f16, &mut params)?,
                        Family::Gemma3 => (self.plan_prefill_gemma(m, &args, map, g, pb, (&mirror.k, &mirror.v), rows, &mut params)?, false),
                    };
                    mirror.prefill = Some(PrefillPlan { rows, f16, guarded, rec: Recorded::bind(&self.ctx.device, plan, &params, Default::default(), Vec::new()) });
                }
                let plan = mirror.prefill.as_ref().expect("recorded above");
                let t0 = std::time::Instant::now();
                let guard = plan.guarded.then_some((&pb.bad, &pb.bad_read));
                let cmd = self.encode_recorded("prefill", &plan.rec, g, None, kind, &pb.x, false, mirror.io(0, false), guard);
                self.ctx.queue.submit([cmd]);
                let t1 = std::time::Instant::now();
                let (back, _) = self.read_result(g, kind, mirror.io(0, false), None)?;
                let tripped = plan.guarded && self.ctx.read_back::<u32>(&pb.bad_read, 1)?[0] != 0;
                let mut prof = self.profile.lock().unwrap_or_else(|e| e.into_inner());
                self.add_dispatch_times(g, &plan.rec, &mut prof.prefill_kernels)?;
                prof.prefill_setup += t0 - ts;
                prof.prefill_host += t1 - t0;
                prof.prefill_tail += t1.elapsed();
                if tripped {
                    prof.prefill_f16_reruns += 1;
                    if prof.prefill_f16_reruns == 1 {
                        eprintln!("cortiq: wgpu: a prompt chunk's values exceed f16's range; such chunks run again on the int8 and f32 kernels (slower)");
                    }
                    f16 = false;
                    continue;
                }
                prof.prefill_chunks += 1;
                prof.prefill_rows += rows as u64;
                return Ok(back);
            }
        })
    }

    /// The chunk's dispatches in order (see the module docs), on the matrix units where `f16`
    /// allows, and whether any of them sets the f16 guard's word; `args` is `graph_weights`
    /// order, `mk`/`mv` the mirror's per-layer K and V.
    #[allow(clippy::too_many_arguments)]
    fn plan_prefill<'a>(&self, m: &crate::model::llama::Llama, args: &[WeightArg], map: &'a HashMap<u64, Resident>, g: &'a ModelGraph, pb: &'a PrefillBuffers, mk: &'a [wgpu::Buffer], mv: &'a [wgpu::Buffer], rows: usize, f16: bool, params: &mut Params) -> Result<(Vec<Planned<'a>>, bool), String> {
        let c = &m.cfg;
        let ctx = &self.ctx;
        let res = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let (d, ff, qd, n) = (c.n_embd as u32, c.n_ff as u32, c.q_dim() as u32, rows as u32);
        let mut p: Vec<Planned> = Vec::new();
        // y (rows, w.rows) = x (rows, cols) . W^T
        let proj = |w: &'a Resident, x: &'a wgpu::Buffer, y: &'a wgpu::Buffer, cols: u32, params: &mut Params, p: &mut Vec<Planned<'a>>| plan::matmul(ctx, w, MatvecIo::plain(x, y, 0), cols, n, false, params, p);
        // The quantizers guard the values the GEMMs round to f16 where those may run on the
        // matrix units (or where a test forces the guard: `with_f16_guard_forced`).
        let guarded_quant = match f16 && pb.int8.is_some() {
            true => Some(ctx.quant_guarded()?),
            false => None,
        };
        // With int8 activations a stage's input (rows, cols) is quantized once (`input`; down's
        // as SiLU(gate) * up, so no activation step of its own), then every projection of the
        // stage reads the int8 rows (`proj_in`). One uniform block per kind of input.
        let (q_d, q_qd, q_glu) = match pb.int8 {
            Some(_) => (quant_slot(params, d, QUANT_PLAIN, 0.0), quant_slot(params, qd, QUANT_PLAIN, 0.0), quant_slot(params, ff, QUANT_SILU, 0.0)),
            None => (0, 0, 0),
        };
        let input = |x: &'a wgpu::Buffer, x2: &'a wgpu::Buffer, cols: u32, at: u64, p: &mut Vec<Planned<'a>>| {
            if let Some((xq, xd)) = &pb.int8 {
                let mut q = quantize_rows(ctx, x, x2, xq, xd, at, cols, n);
                if let Some(pipe) = &guarded_quant {
                    q.pipe = pipe.clone();
                    q.bufs.push(&pb.bad);
                }
                p.push(q);
            }
        };
        let proj_in = |w: &'a Resident, x: &'a wgpu::Buffer, y: &'a wgpu::Buffer, cols: u32, params: &mut Params, p: &mut Vec<Planned<'a>>| match &pb.int8 {
            Some((xq, xd)) => plan::matmul(ctx, w, MatvecIo { x: xq, x2: Some(xd), y, y_base: 0, variant: Variant { x: XMode::Int8, add: false }, eps: 0.0 }, cols, n, f16, params, p),
            None => proj(w, x, y, cols, params, p),
        };
        let norm = |params: &mut Params, add: bool, row0: u32| params.slot(bytemuck::bytes_of(&NormBlock { n: d, add: u32::from(add), eps: c.eps, row0 }));
        let rope_threads = ((c.n_head + c.n_head_kv) * c.rope_dims / 2 + c.kv_dim()) as u32;
        let attention = ctx.prompt_attention(c.head_dim, f16);
        let attention_bufs = |li: usize| match attention.guarded {
            true => vec![&pb.q, &mk[li], &mv[li], &pb.att, &pb.bad],
            false => vec![&pb.q, &mk[li], &mv[li], &pb.att],
        };
        let guarded = guarded_quant.is_some() || attention.guarded;
        for (li, w) in args[..7 * g.layers].chunks_exact(7).enumerate() {
            let (attn_norm, ffn_norm) = &g.norms[li];
            let at = norm(params, li > 0, 0);
            p.push(Planned { label: "norm", pipe: ctx.norm.clone(), bufs: vec![&pb.x, &pb.o, attn_norm, &pb.xn], uniform: Uniform::Slot(at), grid: Grid::Fixed(n, 1, 1) });
            let at = p.len();
            input(&pb.xn, &pb.xn, d, q_d, &mut p);
            proj_in(res(&w[0])?, &pb.xn, &pb.q, d, params, &mut p)?;
            proj_in(res(&w[1])?, &pb.xn, &pb.k, d, params, &mut p)?;
            proj_in(res(&w[2])?, &pb.xn, &pb.v, d, params, &mut p)?;
            relabel(&mut p, at, "qkv");
            p.push(Planned { label: "rope+kv append", pipe: ctx.rope_store.clone(), bufs: vec![&pb.q, &pb.k, &pb.v, &mk[li], &mv[li]], uniform: Uniform::Whole(&pb.step), grid: Grid::Fixed(rope_threads.div_ceil(64), n, 1) });
            p.push(Planned { label: "attention", pipe: attention.pipe.clone(), bufs: attention_bufs(li), uniform: Uniform::Whole(&pb.step), grid: Grid::Fixed(c.n_head as u32, n.div_ceil(attention.rows), 1) });
            let at = p.len();
            input(&pb.att, &pb.att, qd, q_qd, &mut p);
            proj_in(res(&w[3])?, &pb.att, &pb.o, qd, params, &mut p)?;
            relabel(&mut p, at, "o proj");
            let at = norm(params, true, 0);
            p.push(Planned { label: "norm", pipe: ctx.norm.clone(), bufs: vec![&pb.x, &pb.o, ffn_norm, &pb.xn], uniform: Uniform::Slot(at), grid: Grid::Fixed(n, 1, 1) });
            let at = p.len();
            input(&pb.xn, &pb.xn, d, q_d, &mut p);
            proj_in(res(&w[4])?, &pb.xn, &pb.g, d, params, &mut p)?;
            proj_in(res(&w[5])?, &pb.xn, &pb.u, d, params, &mut p)?;
            relabel(&mut p, at, "gate, up");
            if pb.int8.is_none() {
                plan::act(ctx, &pb.g, &pb.u, n * ff, 0, params, &mut p);
            }
            let at = p.len();
            input(&pb.g, &pb.u, ff, q_glu, &mut p);
            proj_in(res(&w[6])?, &pb.g, &pb.o, ff, params, &mut p)?;
            relabel(&mut p, at, "down");
        }
        if g.layers < m.layers.len() {
            // A device prefix: the last down projection added into every row's residual
            // stream (a norm with the add; its normed rows are not read), which comes back.
            let at = norm(params, true, 0);
            p.push(Planned { label: "residual add", pipe: ctx.norm.clone(), bufs: vec![&pb.x, &pb.o, &g.out_norm, &pb.xn], uniform: Uniform::Slot(at), grid: Grid::Fixed(n, 1, 1) });
            return Ok((p, guarded));
        }
        // The last row only: its residual added, normed, through the head (its argmax, where
        // asked for, encoded after the plan: `encode_recorded`).
        let at = norm(params, true, n - 1);
        p.push(Planned { label: "final norm", pipe: ctx.norm.clone(), bufs: vec![&pb.x, &pb.o, &g.out_norm, &pb.last], uniform: Uniform::Slot(at), grid: Grid::Fixed(1, 1, 1) });
        let at = p.len();
        plan::matvec(ctx, res(&args[args.len() - 1])?, MatvecIo::plain(&pb.last, &g.logits, 0), d, 1, params, &mut p)?;
        relabel(&mut p, at, "head");
        Ok((p, guarded))
    }
}
