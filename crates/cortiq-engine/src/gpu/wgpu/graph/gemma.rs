//! The token graph of the Gemma 3 block (SPEC section 8, one command buffer and one compute
//! pass a token, as the llama block's), and its prefill graph (SPEC section 9: the same steps
//! over a prompt chunk's rows). Per layer: QKV from the normed residual, each head of q and k
//! RMS-normed, rotated at the layer's base and K / V appended to the mirror (inside the
//! decode split with `CMF_WGPU_ROPE_FOLD`, `attn_split_normed`; else, and in a prompt chunk,
//! one dispatch of `norm_rope.wgsl`), split attention (over the window ending at the token
//! on the sliding layers: the step block's `window`) and its combine, the O projection, its output normed and
//! added into the residual with the FFN's input norm after it (`post_norm.wgsl`), gate and up,
//! the activation times up (`act.wgsl`: tanh-GELU), down, and its output normed and added the
//! same way with the next layer's input norm (or the output norm) after it; then the head.
//! Activations stay f32 (no int8, matrix-unit or folded forms); the token's embedding row is
//! decoded on the device and scaled by sqrt(n_embd) (a prompt's rows by the host).

use super::super::multi::{self, MultiIo};
use super::super::plan::{self, Grid, MatvecIo, Params, Planned, Uniform};
use super::super::{act_code, Resident, WgpuBackend};
use super::prefill::PrefillBuffers;
use super::{relabel, ModelGraph, Mirror, NormBlock, Recorded, StepBlock, ATT_CHUNK};
use crate::gpu::backend::WeightArg;
use crate::model::llama::{Llama, LlamaConfig};
use std::collections::{BTreeMap, HashMap};
use wgpu::util::DeviceExt;

/// What a Gemma 3 graph holds beyond the llama block's buffers.
pub(in crate::gpu::wgpu) struct GemmaBuffers {
    /// Per layer the weights of the q norm and the k norm (head_dim each), then of the
    /// attention output's and the FFN output's norms (n_embd each).
    norms: Vec<[wgpu::Buffer; 4]>,
    t: wgpu::Buffer, // (n_embd) the O or down projection, before its norm
    /// The sliding-window layers' step block (their RoPE base and window), and the block of
    /// every position, copied into it at the start of each token's command buffer.
    step_local: wgpu::Buffer,
    steps_local: wgpu::Buffer,
}

/// Why the Gemma block cannot run as a token graph, if it cannot.
pub(super) fn unsupported(c: &LlamaConfig) -> Option<&'static str> {
    (!c.qk_norm || !c.post_norms).then_some("cannot build a graph: the wgpu graph takes the Gemma block with its q/k and sandwich norms")
}

/// A sliding-window layer's step block `b`: its RoPE base and window.
pub(super) fn local(m: &Llama, b: StepBlock) -> Option<StepBlock> {
    let s = m.cfg.sliding?;
    Some(StepBlock { base: s.rope_base, window: s.window as u32, ..b })
}

impl WgpuBackend {
    /// The Gemma block's buffers for a graph of `m` with `capacity` positions.
    pub(super) fn gemma_buffers(&self, m: &Llama, capacity: usize) -> GemmaBuffers {
        let dev = &self.ctx.device;
        let vector = |label: &str, v: &Option<Vec<f32>>| self.const_buf(label, v.as_deref().expect("checked by gemma::unsupported"));
        let blocks: Vec<StepBlock> = (0..capacity.max(1)).map(|pos| super::step_block(m, pos, (pos + 1).div_ceil(ATT_CHUNK) as u32, self.rope_fold)).map(|b| local(m, b).unwrap_or(b)).collect();
        GemmaBuffers {
            norms: m.layers.iter().map(|l| [vector("q_norm", &l.q_norm), vector("k_norm", &l.k_norm), vector("post_attn_norm", &l.post_attn_norm), vector("post_ffn_norm", &l.post_ffn_norm)]).collect(),
            t: self.storage_buf("stage-out", m.cfg.n_embd),
            step_local: dev.create_buffer(&wgpu::BufferDescriptor { label: Some("step-local"), size: std::mem::size_of::<StepBlock>() as u64, usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false }),
            steps_local: dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("steps-local"), contents: bytemuck::cast_slice(&blocks), usage: wgpu::BufferUsages::COPY_SRC }),
        }
    }

    /// Plan and bind one token's dispatches of a Gemma 3 model (the module's list) against
    /// the graph buffers and this mirror.
    pub(super) fn record_gemma(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &ModelGraph, mirror: &Mirror) -> Result<Recorded, String> {
        let c = &m.cfg;
        let ctx = &self.ctx;
        let gb = g.gemma.as_ref().ok_or("a Gemma graph without its buffers")?;
        let res = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let mut params = Params::default();
        let mut p: Vec<Planned> = Vec::new();
        let (d, ff, qd) = (c.n_embd as u32, c.n_ff as u32, c.q_dim() as u32);
        let mut stage_bytes: BTreeMap<&'static str, u64> = BTreeMap::new();
        let mut stage = |p: &mut [Planned], at: usize, label: &'static str, ws: &[WeightArg]| {
            relabel(p, at, label);
            *stage_bytes.entry(label).or_default() += ws.iter().map(|w| w.view.bytes.len() as u64).sum::<u64>();
        };
        let norm_at = |params: &mut Params, n: usize| params.slot(bytemuck::bytes_of(&NormBlock { n: n as u32, add: 0, eps: c.eps, row0: 0 }));
        let model_at = norm_at(&mut params, c.n_embd);
        // The embedding row decoded on the device where the embedding is resident in one
        // piece (else the host writes it, scaled as the CPU path scales it).
        if g.layers == m.layers.len() {
            if let Some(e) = map.get(&m.weight_arg(&m.embed).key) {
                let _ = plan::embed(ctx, e, &g.tok, &g.x, d, c.embed_scale, &mut params, &mut p);
            }
        }
        let first_norm = g.norms.first().map_or(&g.out_norm, |n| &n.0);
        p.push(Planned { label: "norm", pipe: ctx.norm.clone(), bufs: vec![&g.x, &g.zero, first_norm, &g.xn], uniform: Uniform::Slot(model_at), grid: Grid::Fixed(1, 1, 1) });
        let heads = (c.n_head + c.n_head_kv) as u32;
        for (li, w) in args[..7 * g.layers].chunks_exact(7).enumerate() {
            let [q_norm, k_norm, post_attn, post_ffn] = &gb.norms[li];
            let ffn_norm = &g.norms[li].1;
            let next_norm = g.norms.get(li + 1).map_or(&g.out_norm, |n| &n.0);
            let step = if c.is_local(li) { &gb.step_local } else { &g.step };
            let at = p.len();
            self.normed_matvecs(&g.xn, &[res(&w[0])?, res(&w[1])?, res(&w[2])?], vec![&g.q, &g.k, &g.v], d, &mut params, &mut p)?;
            stage(&mut p, at, "qkv", &w[0..3]);
            // The q/k norms, RoPE and the append inside the split (`CMF_WGPU_ROPE_FOLD`, on by
            // default), else one dispatch of their own before the plain split.
            if self.rope_fold {
                p.push(Planned { label: "attention split (q/k norm+rope+kv append)", pipe: ctx.attn_split_normed.clone(), bufs: vec![&g.q, &g.k, &g.v, &mirror.k[li], &mirror.v[li], &g.part, q_norm, k_norm], uniform: Uniform::Whole(step), grid: Grid::HeadsByChunks(c.n_head as u32) });
            } else {
                p.push(Planned { label: "q/k norm+rope+kv append", pipe: ctx.norm_rope.clone(), bufs: vec![&g.q, &g.k, &g.v, &mirror.k[li], &mirror.v[li], q_norm, k_norm], uniform: Uniform::Whole(step), grid: Grid::Fixed(heads, 1, 1) });
                p.push(Planned { label: "attention split", pipe: ctx.attn_split.clone(), bufs: vec![&g.q, &g.k, &g.v, &mirror.k[li], &mirror.v[li], &g.part], uniform: Uniform::Whole(step), grid: Grid::HeadsByChunks(c.n_head as u32) });
            }
            p.push(Planned { label: "attention combine", pipe: ctx.attn_combine.clone(), bufs: vec![&g.part, &g.att], uniform: Uniform::Whole(step), grid: Grid::Fixed(c.n_head as u32, 1, 1) });
            let at = p.len();
            plan::matvec(ctx, res(&w[3])?, MatvecIo::plain(&g.att, &gb.t, 0), qd, 1, &mut params, &mut p)?;
            stage(&mut p, at, "o proj", &w[3..4]);
            p.push(Planned { label: "sandwich norm (+residual)", pipe: ctx.post_norm.clone(), bufs: vec![&g.x, &gb.t, post_attn, ffn_norm, &g.xn], uniform: Uniform::Slot(model_at), grid: Grid::Fixed(1, 1, 1) });
            let at = p.len();
            self.normed_matvecs(&g.xn, &[res(&w[4])?, res(&w[5])?], vec![&g.g, &g.u], d, &mut params, &mut p)?;
            stage(&mut p, at, "gate, up", &w[4..6]);
            plan::act(ctx, &g.g, &g.u, ff, act_code(c.act), &mut params, &mut p);
            let at = p.len();
            plan::matvec(ctx, res(&w[6])?, MatvecIo::plain(&g.g, &gb.t, 0), ff, 1, &mut params, &mut p)?;
            stage(&mut p, at, "down", &w[6..7]);
            p.push(Planned { label: "sandwich norm (+residual)", pipe: ctx.post_norm.clone(), bufs: vec![&g.x, &gb.t, post_ffn, next_norm, &g.xn], uniform: Uniform::Slot(model_at), grid: Grid::Fixed(1, 1, 1) });
        }
        if g.layers == m.layers.len() {
            let head = &args[args.len() - 1];
            let at = p.len();
            plan::matvec(ctx, res(head)?, MatvecIo::plain(&g.xn, &g.logits, 0), d, 1, &mut params, &mut p)?;
            stage(&mut p, at, "head", std::slice::from_ref(head));
        }
        Ok(Recorded::bind(&ctx.device, p, &params, stage_bytes, Vec::new()))
    }

    /// A prompt chunk of `rows` rows through the Gemma block (the prefill graph's plan; every
    /// step as the token's, over rows: the projections as f32 GEMMs, `attn_rows` with each
    /// row's window on the sliding layers), then the last row's final norm and the head, or
    /// for a device prefix every row's residual stream; `args` in `graph_weights` order, `kv`
    /// the mirror's per-layer K and V.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn plan_prefill_gemma<'a>(&self, m: &Llama, args: &[WeightArg], map: &'a HashMap<u64, Resident>, g: &'a ModelGraph, pb: &'a PrefillBuffers, (mk, mv): (&'a [wgpu::Buffer], &'a [wgpu::Buffer]), rows: usize, params: &mut Params) -> Result<Vec<Planned<'a>>, String> {
        let c = &m.cfg;
        let ctx = &self.ctx;
        let gb = g.gemma.as_ref().ok_or("a Gemma graph without its buffers")?;
        let res = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let (d, ff, qd, n) = (c.n_embd as u32, c.n_ff as u32, c.q_dim() as u32, rows as u32);
        let mut p: Vec<Planned> = Vec::new();
        // y (rows, w.rows) = x (rows, cols) . W^T, labelled `label`.
        let proj = |ws: &[(&'a Resident, &'a wgpu::Buffer)], x: &'a wgpu::Buffer, cols: u32, label: &'static str, params: &mut Params, p: &mut Vec<Planned<'a>>| -> Result<(), String> {
            let at = p.len();
            for (w, y) in ws {
                plan::matmul(ctx, w, MatvecIo::plain(x, y, 0), cols, n, false, params, p)?;
            }
            relabel(p, at, label);
            Ok(())
        };
        let norm_at = |params: &mut Params, n: usize, row0: u32| params.slot(bytemuck::bytes_of(&NormBlock { n: n as u32, add: 0, eps: c.eps, row0 }));
        let model_at = norm_at(params, c.n_embd, 0);
        let first_norm = g.norms.first().map_or(&g.out_norm, |n| &n.0);
        p.push(Planned { label: "norm", pipe: ctx.norm.clone(), bufs: vec![&pb.x, &pb.o, first_norm, &pb.xn], uniform: Uniform::Slot(model_at), grid: Grid::Fixed(n, 1, 1) });
        let heads = (c.n_head + c.n_head_kv) as u32;
        let attention = ctx.prompt_attention(c.head_dim, false);
        for (li, w) in args[..7 * g.layers].chunks_exact(7).enumerate() {
            let [q_norm, k_norm, post_attn, post_ffn] = &gb.norms[li];
            let ffn_norm = &g.norms[li].1;
            let next_norm = g.norms.get(li + 1).map_or(&g.out_norm, |n| &n.0);
            let step = match (&pb.step_local, c.is_local(li)) {
                (Some(local), true) => local,
                _ => &pb.step,
            };
            proj(&[(res(&w[0])?, &pb.q), (res(&w[1])?, &pb.k), (res(&w[2])?, &pb.v)], &pb.xn, d, "qkv", params, &mut p)?;
            p.push(Planned { label: "q/k norm+rope+kv append", pipe: ctx.norm_rope.clone(), bufs: vec![&pb.q, &pb.k, &pb.v, &mk[li], &mv[li], q_norm, k_norm], uniform: Uniform::Whole(step), grid: Grid::Fixed(n * heads, 1, 1) });
            p.push(Planned { label: "attention", pipe: attention.pipe.clone(), bufs: vec![&pb.q, &mk[li], &mv[li], &pb.att], uniform: Uniform::Whole(step), grid: Grid::Fixed(c.n_head as u32, n.div_ceil(attention.rows), 1) });
            proj(&[(res(&w[3])?, &pb.o)], &pb.att, qd, "o proj", params, &mut p)?;
            p.push(Planned { label: "sandwich norm (+residual)", pipe: ctx.post_norm.clone(), bufs: vec![&pb.x, &pb.o, post_attn, ffn_norm, &pb.xn], uniform: Uniform::Slot(model_at), grid: Grid::Fixed(n, 1, 1) });
            proj(&[(res(&w[4])?, &pb.g), (res(&w[5])?, &pb.u)], &pb.xn, d, "gate, up", params, &mut p)?;
            plan::act(ctx, &pb.g, &pb.u, n * ff, act_code(c.act), params, &mut p);
            proj(&[(res(&w[6])?, &pb.o)], &pb.g, ff, "down", params, &mut p)?;
            p.push(Planned { label: "sandwich norm (+residual)", pipe: ctx.post_norm.clone(), bufs: vec![&pb.x, &pb.o, post_ffn, next_norm, &pb.xn], uniform: Uniform::Slot(model_at), grid: Grid::Fixed(n, 1, 1) });
        }
        if g.layers < m.layers.len() {
            // A device prefix: every row's residual stream (its last sandwich norm added) comes back.
            return Ok(p);
        }
        // The last row normed again into `last` (the sandwich norm's output rows are
        // (rows, n_embd); the head reads one row from float 0), then the head.
        let at = norm_at(params, c.n_embd, n - 1);
        p.push(Planned { label: "final norm", pipe: ctx.norm.clone(), bufs: vec![&pb.x, &pb.o, &g.out_norm, &pb.last], uniform: Uniform::Slot(at), grid: Grid::Fixed(1, 1, 1) });
        let at = p.len();
        plan::matvec(ctx, res(&args[args.len() - 1])?, MatvecIo::plain(&pb.last, &g.logits, 0), d, 1, params, &mut p)?;
        relabel(&mut p, at, "head");
        Ok(p)
    }

    /// Matrices `ws` of one input `xn` (cols) into `ys`: one dispatch where `multi.rs` takes
    /// them, else a matvec each.
    fn normed_matvecs<'a>(&self, xn: &'a wgpu::Buffer, ws: &[&'a Resident], ys: Vec<&'a wgpu::Buffer>, cols: u32, params: &mut Params, p: &mut Vec<Planned<'a>>) -> Result<(), String> {
        if self.multi && multi::matvecs(&self.ctx, ws, MultiIo::like(MatvecIo::plain(xn, ys[0], 0), ys.clone()), cols, params, p).is_ok() {
            return Ok(());
        }
        for (w, y) in ws.iter().zip(ys) {
            plan::matvec(&self.ctx, w, MatvecIo::plain(xn, y, 0), cols, 1, params, p)?;
        }
        Ok(())
    }
}

/// Copy the sliding-window layers' step block of position `pos` into place, where the graph
/// has them (a command of the token's encoder, before its pass).
pub(super) fn copy_local_step(g: &ModelGraph, enc: &mut wgpu::CommandEncoder, pos: usize) {
    if let Some(gb) = &g.gemma {
        let block = std::mem::size_of::<StepBlock>() as u64;
        enc.copy_buffer_to_buffer(&gb.steps_local, pos as u64 * block, &gb.step_local, 0, block);
    }
}
