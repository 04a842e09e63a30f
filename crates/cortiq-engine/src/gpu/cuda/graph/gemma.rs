//! Gemma 3's decode token on CUDA (SPEC section 8): the llama token graph's frame (embedding
//! row, split attention and merge, head with the final norm and argmax) around Gemma's own
//! layer. Nine launches a layer (counted as the llama graph counts its six): Q/K/V with the
//! input norm fused, written as they come out (`qkv_rows`); the q/k head norms, RoPE (the
//! layer's base), the query's scale and the KV-mirror append (`gemma_norm_rope`); attention
//! over the layer's window (split, merge); the output projection; its sandwich norm added
//! into the stream (`add_normed`); gate/up with the FFN norm and tanh-GELU fused; down; its
//! sandwich norm added. Activations stay f32 (no int8 chain, no fused FFN, no cluster
//! launch). A prompt chunk runs the same layer over its rows with cuBLAS's f16 GEMMs
//! (`queue_gemma_prefill`).

use super::{qkv_parts, Attention, GraphRead, Heads, Mirror, ModelGraph, TokenRead, ATT_CHUNK};
use crate::gpu::cuda::launch::{launch, KernelArgs};
use crate::gpu::cuda::{err, kind, row_kernel, row_smem, CudaBackend, MatvecHow, Resident};
use crate::gpu::backend::{Activation, WeightArg};
use crate::model::llama::{Llama, LlamaConfig};
use cudarc::driver::{CudaSlice, LaunchConfig};
use std::collections::HashMap;
use std::time::Instant;

/// Gemma 3's per-layer vectors and scratch on the device.
pub(super) struct GemmaBuffers {
    /// Per layer: q_norm, k_norm (head_dim each), post_attn_norm, post_ffn_norm (n_embd each).
    norms: Vec<[CudaSlice<f32>; 4]>,
    y: CudaSlice<f32>, // (q_dim + 2 kv_dim) the raw Q, K and V projections
    t: CudaSlice<f32>, // (n_embd) a projection before its sandwich norm
}

/// Whether the Gemma token graph takes `m`: every layer has its q/k and sandwich norms, and
/// the FFN is tanh-GELU's (the one GELU the gate/up kernels are built for).
pub(super) fn takes(m: &Llama) -> bool {
    m.cfg.act == Activation::GeluTanh && m.layers.iter().all(|l| l.q_norm.is_some() && l.k_norm.is_some() && l.post_attn_norm.is_some() && l.post_ffn_norm.is_some())
}

impl CudaBackend {
    /// `m`'s Gemma buffers: its norm vectors uploaded, its scratch allocated.
    pub(super) fn gemma_buffers(&self, m: &Llama) -> Result<GemmaBuffers, String> {
        let s = &self.stream;
        let c = &m.cfg;
        let up = |v: &Option<Vec<f32>>| s.clone_htod(v.as_deref().ok_or("a Gemma 3 layer without its norms")?).map_err(err);
        let mut norms = Vec::with_capacity(c.n_layer);
        for l in &m.layers {
            norms.push([up(&l.q_norm)?, up(&l.k_norm)?, up(&l.post_attn_norm)?, up(&l.post_ffn_norm)?]);
        }
        Ok(GemmaBuffers { norms, y: s.alloc_zeros::<f32>(c.q_dim() + 2 * c.kv_dim()).map_err(err)?, t: s.alloc_zeros::<f32>(c.n_embd).map_err(err)? })
    }

    /// Queue every kernel of one Gemma 3 token (token and position in the mirror's params):
    /// the embedding row, the layers as the module doc says, the head. `args` is
    /// `all_weights` order; `capacity` sizes the split-attention grid.
    pub(super) fn queue_gemma_token(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &Mirror, capacity: usize) -> Result<(), String> {
        let mut gb = g.gemma.take().ok_or("the Gemma graph's buffers were not built")?;
        let queued = self.queue_gemma_launches(m, args, map, g, &mut gb, mirror, capacity);
        g.gemma = Some(gb);
        queued
    }

    /// `queue_gemma_token`'s launches, with the Gemma buffers `gb` taken out of `g`.
    #[allow(clippy::too_many_arguments)]
    fn queue_gemma_launches(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, gb: &mut GemmaBuffers, mirror: &Mirror, capacity: usize) -> Result<(), String> {
        let c = &m.cfg;
        let s = &self.stream;
        let dev = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let kd = |w: &WeightArg| kind(w.view.codec).expect("checked by unsupported()");
        let (d, eps) = (c.n_embd as i32, c.eps);
        let (qd, kvd) = (c.q_dim() as i32, c.kv_dim() as i32);
        let pos_ptr = mirror.params.slice(1..2);
        let (qkind, gkind) = (kd(&args[0]), kd(&args[4]));
        let (glu_f, glu_cfg) = self.glu_launch("gate_up_gelu_tanh", gkind, c)?;
        let ov = self.overlap;
        self.note_graph("Gemma 3 layers: 9 launches each, f32 activations".into());
        self.launch_embed(m, args, map, (&mirror.params.slice(0..1), 1), &g.x, &g.best, None)?;
        for li in 0..c.n_layer {
            let w = &args[li * 7..li * 7 + 7];
            let (wq, wk, wv) = (dev(&w[0])?, dev(&w[1])?, dev(&w[2])?);
            let [q_norm, k_norm, post_attn, post_ffn] = &gb.norms[li];
            let window = c.layer_attention(li).1;
            for (kind, first, rows) in qkv_parts(c, qkind, kd(&w[2])) {
                let (f, cfg) = self.spread_row_launch(&row_kernel("qkv_rows", kind, 2), rows, 2, row_smem(kind, c.n_embd))?;
                let mut a = KernelArgs::default();
                a.buf(&wq.data, s).buf(&wk.data, s).buf(&wv.data, s).int(wq.a_off).int(wk.a_off).int(wv.a_off).buf(&g.x, s);
                a.buf(&g.norms[li].0, s).float(eps).buf(&gb.y, s).int(qd).int(kvd).int(d).int(first as i32).int(rows as i32);
                // SAFETY: the resident Q, K and V weights (their rows of n_embd values),
                // x (n_embd) and its norm, y (q_dim + 2 kv_dim); the staged row fits the
                // shared memory granted (unsupported()).
                unsafe { launch(s, f, cfg, &a, ov) }.map_err(err)?;
            }
            self.launch_gemma_norm_rope(c, (&gb.y, &g.q), (q_norm, k_norm), mirror, li, 1, ov)?;
            let heads = Heads::of(c);
            let att = Attention { heads, q: &g.q, k: &mirror.k[li], v: &mirror.v[li], part: &g.part, out: &g.att, out_img: None, f16_guard: None, pos: &pos_ptr, rows: 1, splits: capacity.div_ceil(ATT_CHUNK), part_splits: g.splits, scale: 1.0, window: window.unwrap_or(0), keys: 0 };
            self.launch_attention(&att, ov)?;
            self.launch_matvec(&w[3], map, &g.att, &mut gb.t, 1, MatvecHow { overlap: true, ..Default::default() })?;
            self.launch_add_normed(c, &g.x, &gb.t, post_attn, 1, ov)?;
            let (wg, wu) = (dev(&w[4])?, dev(&w[5])?);
            let mut a = KernelArgs::default();
            a.buf(&wg.data, s).buf(&wu.data, s).int(wg.a_off).int(wu.a_off).buf(&g.x, s).buf(&g.norms[li].1, s).float(eps).buf(&g.h, s).int(c.n_ff as i32).int(d);
            // SAFETY: the resident gate and up weights, x (n_embd) and its norm, h (n_ff).
            unsafe { launch(s, glu_f, glu_cfg, &a, ov) }.map_err(err)?;
            self.launch_matvec(&w[6], map, &g.h, &mut gb.t, 1, MatvecHow { overlap: true, ..Default::default() })?;
            self.launch_add_normed(c, &g.x, &gb.t, post_ffn, 1, ov)?;
        }
        let head = MatvecHow { norm: Some((&g.out_norm, eps)), argmax: Some(&g.best), overlap: true, ..Default::default() };
        self.launch_matvec(&args[args.len() - 2], map, &g.x, &mut g.logits, 1, head)
    }
}

/// Why a Gemma 3 prompt chunk runs per op (not "cannot build": the token graph takes the model).
pub(super) const NO_CUBLAS: &str = "the CUDA prefill graph runs Gemma 3's prompt chunks through cuBLAS only, which did not load";
const NO_F16_SCRATCH: &str = "the CUDA prefill graph runs Gemma 3's prompt chunks through cuBLAS only, whose scratch could not be had";
const F16_RANGE: &str = "a Gemma 3 prompt chunk's values exceed f16's range (the CUDA prefill graph's cuBLAS GEMMs): it runs per op";

impl CudaBackend {
    /// A Gemma 3 prompt chunk of `rows` rows (tokens in the prefill buffers, the first row's
    /// position in the mirror's params[1]) through the prefill graph, then what `read` asks
    /// for; declined (the chunk runs per op) where the f16 guard tripped or the cuBLAS
    /// scratch is missing.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub(super) fn run_gemma_prefill(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, mirror: &Mirror, rows: usize, read: TokenRead) -> Result<Result<(GraphRead, Instant), &'static str>, String> {
        let gb = g.gemma.take().ok_or("the Gemma graph's buffers were not built")?;
        let queued = self.queue_gemma_prefill(m, args, map, g, &gb, mirror, rows);
        g.gemma = Some(gb);
        if let Err(why) = queued? {
            return Ok(Err(why));
        }
        let queued = Instant::now();
        if self.f16_guard_tripped(g.prefill.as_ref().expect("made by run_prefill"), &format!("{F16_RANGE} (slower)"))? {
            return Ok(Err(F16_RANGE));
        }
        Ok(Ok((self.read_now(g, read)?, queued)))
    }

    /// Queue a Gemma 3 prompt chunk: embedding rows; per layer the Q/K/V GEMM (cuBLAS, f16
    /// operands over the input norm), `gemma_norm_rope` over the rows, the chunk's attention
    /// (the tensor-core tiles with the layer's window; FP32 tiles where `CMF_CUDA_FLASH=0`),
    /// the O GEMM and its sandwich norm added, gate/up's GEMM, tanh-GELU into f16, the down
    /// GEMM and its sandwich norm added; then the head for the last row. The f16 guard word
    /// is zeroed first and set by the glue.
    #[allow(clippy::too_many_arguments)]
    fn queue_gemma_prefill(&self, m: &Llama, args: &[WeightArg], map: &HashMap<u64, Resident>, g: &mut ModelGraph, gb: &GemmaBuffers, mirror: &Mirror, rows: usize) -> Result<Result<(), &'static str>, String> {
        let c = &m.cfg;
        let s = &self.stream;
        let dev = |w: &WeightArg| map.get(&w.key).ok_or_else(|| "weight not resident".to_string());
        let (d, eps, qkv_rows) = (c.n_embd, c.eps, c.q_dim() + 2 * c.kv_dim());
        let pos_ptr = mirror.params.slice(1..2);
        let capacity = mirror.k[0].len() / c.kv_dim().max(1);
        let Ok(blas) = self.blas.as_ref() else { return Ok(Err(NO_CUBLAS)) };
        let pb = g.prefill.as_mut().expect("made by run_prefill");
        if rows > pb.rows {
            return Err(format!("{rows} prompt rows for prefill buffers of {}", pb.rows));
        }
        let Some(f) = pb.f16.as_mut() else { return Ok(Err(NO_F16_SCRATCH)) };
        s.memset_zeros(&mut pb.f16_bad).map_err(err)?;
        let bad = &pb.f16_bad;
        let ov = self.overlap;
        self.launch_embed(m, args, map, (&pb.tokens, rows), &pb.x, &g.best, None)?;
        for li in 0..c.n_layer {
            let w = &args[li * 7..li * 7 + 7];
            let [q_norm, k_norm, post_attn, post_ffn] = &gb.norms[li];
            let window = c.layer_attention(li).1;
            self.launch_norm_f16(&pb.x, &g.norms[li].0, eps, (rows, d), &f.x, bad)?;
            let mut at = 0;
            for wi in &w[..3] {
                self.queue_dequant(wi, dev(wi)?, &f.w.slice(at..), bad)?;
                at += wi.view.rows * wi.view.cols;
            }
            blas.gemm(s, &f.x, &f.w, &mut f.y, (rows, qkv_rows, d), false)?;
            self.launch_gemma_norm_rope(c, (&f.y, &pb.q), (q_norm, k_norm), mirror, li, rows, false)?;
            let att = Attention { heads: Heads::of(c), q: &pb.q, k: &mirror.k[li], v: &mirror.v[li], part: &pb.part, out: &pb.att, out_img: None, f16_guard: Some(bad), pos: &pos_ptr, rows, splits: capacity.div_ceil(ATT_CHUNK), part_splits: pb.part_splits, scale: 1.0, window: window.unwrap_or(0), keys: mirror.len + rows };
            self.launch_attention(&att, ov)?;
            self.queue_to_f16(&pb.att, &f.x, rows * c.q_dim(), bad)?;
            self.queue_dequant(&w[3], dev(&w[3])?, &f.w, bad)?;
            blas.gemm(s, &f.x, &f.w, &mut f.y, (rows, d, c.q_dim()), false)?;
            self.launch_add_normed(c, &pb.x, &f.y, post_attn, rows, false)?;
            self.launch_norm_f16(&pb.x, &g.norms[li].1, eps, (rows, d), &f.x, bad)?;
            self.queue_dequant(&w[4], dev(&w[4])?, &f.w, bad)?;
            self.queue_dequant(&w[5], dev(&w[5])?, &f.w.slice(c.n_ff * d..), bad)?;
            blas.gemm(s, &f.x, &f.w, &mut f.y, (rows, 2 * c.n_ff, d), false)?;
            self.launch_act_mul_f16(&f.y, (rows, c.n_ff), &f.x, bad, Activation::GeluTanh)?;
            self.queue_dequant(&w[6], dev(&w[6])?, &f.w, bad)?;
            blas.gemm(s, &f.x, &f.w, &mut f.y, (rows, d, c.n_ff), false)?;
            self.launch_add_normed(c, &pb.x, &f.y, post_ffn, rows, false)?;
        }
        let last = pb.x.slice((rows - 1) * d..rows * d);
        let head = MatvecHow { norm: Some((&g.out_norm, eps)), argmax: Some(&g.best), overlap: true, ..Default::default() };
        self.launch_matvec(&args[args.len() - 2], map, &last, &mut g.logits, 1, head)?;
        Ok(Ok(()))
    }
}

impl CudaBackend {
    /// Queue Gemma 3's head norms, RoPE (the layer's base) and the mirror append of layer
    /// `li` for `rows` rows from position *params[1]: y (rows, q_dim + 2 kv_dim: the raw
    /// projections) into q (rows, q_dim) and the mirror's rows.
    #[allow(clippy::too_many_arguments)]
    fn launch_gemma_norm_rope(&self, c: &LlamaConfig, (y, q): (&CudaSlice<f32>, &CudaSlice<f32>), (q_norm, k_norm): (&CudaSlice<f32>, &CudaSlice<f32>), mirror: &Mirror, li: usize, rows: usize, overlap: bool) -> Result<(), String> {
        let s = &self.stream;
        let (base, _) = c.layer_attention(li);
        let mut a = KernelArgs::default();
        a.buf(y, s).buf(q_norm, s).buf(k_norm, s).float(c.eps).buf(q, s).buf(&mirror.k[li], s).buf(&mirror.v[li], s);
        a.int(c.n_head as i32).int(c.n_head_kv as i32).int(c.head_dim as i32).int(c.rope_dims as i32).int(c.rope_neox as i32).float(base).float(c.attn_scale).buf(&mirror.params.slice(1..2), s);
        let cfg = LaunchConfig { grid_dim: ((c.n_head + 2 * c.n_head_kv) as u32, rows as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: y and q hold `rows` rows (the token graph's buffers, or the prefill
        // buffers and f16 scratch sized for the chunk), the head norms head_dim (<= 256,
        // unsupported()); positions pos..pos + rows are within the mirror's capacity (the
        // session checks it).
        unsafe { launch(s, &self.funcs["gemma_norm_rope"], cfg, &a, overlap) }.map_err(err)
    }

    /// Queue x (rows, n_embd) += RMS-norm(t) * nw row by row: a projection t's sandwich norm
    /// added into the stream.
    fn launch_add_normed(&self, c: &LlamaConfig, x: &CudaSlice<f32>, t: &CudaSlice<f32>, nw: &CudaSlice<f32>, rows: usize, overlap: bool) -> Result<(), String> {
        let s = &self.stream;
        let mut a = KernelArgs::default();
        a.buf(x, s).buf(t, s).buf(nw, s).float(c.eps).int(c.n_embd as i32);
        let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: x and t hold `rows` rows of n_embd floats, nw n_embd.
        unsafe { launch(s, &self.funcs["add_normed"], cfg, &a, overlap) }.map_err(err)
    }
}
