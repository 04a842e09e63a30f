//! Dispatches before they are encoded: which pipeline, which buffers in binding order, where
//! the uniform block lives, and the grid. Per-op jobs plan, bind and encode per call; the
//! token graph plans and binds once and encodes the same list every token.

use super::context::{Variant, WgpuContext, XMode, F16_GUARD};
use super::Resident;

/// Workgroups along x before a dispatch wraps into y (WebGPU's minimum per-dimension limit).
pub(super) const MAX_GRID: u32 = 65_535;
/// Uniform slot stride: the largest `min_uniform_buffer_offset_alignment` WebGPU allows.
const PARAM_SLOT: u64 = 256;

/// The matvec uniform block (`Params` in matvec.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct MatvecParams {
    pub rows: u32,
    pub units: u32,
    pub a: u32,
    pub b: u32,
    pub c: u32,
    pub x_stride: u32,
    pub y_base: u32,
    pub y_stride: u32,
    pub y_off: u32,
    pub grid_x: u32,
    pub eps: f32,
    pub batch: u32,
}

/// The activation uniform block (`ActParams` in act.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ActParams {
    n: u32,
    act: u32,
    grid_x: u32,
    pad: u32,
}

/// A grid of at least `n` workgroups: (x, y) with x <= MAX_GRID.
pub(super) fn grid(n: u32) -> (u32, u32) {
    let x = n.clamp(1, MAX_GRID);
    (x, n.div_ceil(x).max(1))
}

/// Uniform blocks of a plan, one 256-byte slot each, uploaded as one buffer.
#[derive(Default)]
pub(super) struct Params(pub Vec<u8>);

impl Params {
    /// Append a block; its byte offset.
    pub fn slot(&mut self, bytes: &[u8]) -> u64 {
        let at = self.0.len() as u64;
        self.0.extend_from_slice(bytes);
        self.0.resize((at + PARAM_SLOT) as usize, 0);
        at
    }
}

/// Where a dispatch's uniform block is.
pub(super) enum Uniform<'a> {
    /// A slot of the plan's `Params` buffer.
    Slot(u64),
    /// A whole buffer of its own (the token graph's per-token step block).
    Whole(&'a wgpu::Buffer),
}

/// How many workgroups a dispatch takes.
#[derive(Clone, Copy)]
pub(super) enum Grid {
    Fixed(u32, u32, u32),
    /// (n_head, attention chunks at this token): known only when the token is encoded.
    HeadsByChunks(u32),
}

pub(super) struct Planned<'a> {
    /// What the dispatch does (for per-kernel profiles).
    pub label: &'static str,
    pub pipe: wgpu::ComputePipeline,
    /// Storage buffers in binding order; the uniform block binds after them.
    pub bufs: Vec<&'a wgpu::Buffer>,
    pub uniform: Uniform<'a>,
    pub grid: Grid,
}

/// What a matvec reads and writes: x (batch, cols), its second input `x2` (the norm weights
/// or the up output, per `variant`; x itself for plain), y with its block offset.
pub(super) struct MatvecIo<'a> {
    pub x: &'a wgpu::Buffer,
    pub x2: Option<&'a wgpu::Buffer>,
    pub y: &'a wgpu::Buffer,
    pub y_base: u32,
    pub variant: Variant,
    pub eps: f32,
}

impl<'a> MatvecIo<'a> {
    /// y (at y_base) = x . W^T.
    pub fn plain(x: &'a wgpu::Buffer, y: &'a wgpu::Buffer, y_base: u32) -> MatvecIo<'a> {
        MatvecIo { x, x2: None, y, y_base, variant: Variant::PLAIN, eps: 0.0 }
    }
}

/// A matvec over a resident weight: one dispatch per row chunk.
pub(super) fn matvec<'a>(ctx: &WgpuContext, w: &'a Resident, io: MatvecIo<'a>, cols: u32, batch: u32, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    let total_rows: u32 = w.chunks.iter().map(|c| c.rows).sum();
    let (pipe, shape) = ctx.matvec_pipeline(w.codec, total_rows, cols, io.variant)?;
    for c in &w.chunks {
        let (gx, gy) = grid(c.rows.div_ceil(shape.rows));
        let p = MatvecParams { rows: c.rows, units: c.units, a: c.regions[0], b: c.regions[1], c: c.regions[2], x_stride: cols / 4, y_base: io.y_base, y_stride: total_rows, y_off: c.row0, grid_x: gx, eps: io.eps, batch };
        let at = params.slot(bytemuck::bytes_of(&p));
        out.push(Planned { label: "matvec", pipe: pipe.clone(), bufs: vec![&c.buf, &c.buf, io.x, io.x2.unwrap_or(io.x), io.y], uniform: Uniform::Slot(at), grid: Grid::Fixed(gx, gy, batch) });
    }
    Ok(())
}

/// y (cols) = the row of resident weight `w` (one chunk) whose index is the first word of
/// `tok`, decoded and times `scale` (`embed.wgsl`): the token graph's embedding lookup on
/// the device.
#[allow(clippy::too_many_arguments)]
pub(super) fn embed<'a>(ctx: &WgpuContext, w: &'a Resident, tok: &'a wgpu::Buffer, y: &'a wgpu::Buffer, cols: u32, scale: f32, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    let [c] = w.chunks.as_slice() else {
        return Err("an embedding split into row chunks is looked up on the host".into());
    };
    let pipe = ctx.embed_pipeline(w.codec)?;
    let p = MatvecParams { rows: c.rows, units: c.units, a: c.regions[0], b: c.regions[1], c: c.regions[2], x_stride: cols / 4, y_base: 0, y_stride: 0, y_off: 0, grid_x: 0, eps: scale, batch: 1 };
    let at = params.slot(bytemuck::bytes_of(&p));
    out.push(Planned { label: "embed", pipe, bufs: vec![&c.buf, &c.buf, tok, tok, y], uniform: Uniform::Slot(at), grid: Grid::Fixed((cols / 4).div_ceil(64), 1, 1) });
    Ok(())
}

/// Batches from which a plain matmul runs as the tiled GEMM (each weight tile decoded once
/// for 64 batch columns) rather than a matvec per batch column.
pub const GEMM_MIN_BATCH: u32 = 8;

/// Y (batch, rows) = X . W^T as the tiled GEMM: one dispatch per row chunk; with int8
/// activations on the matrix units where `units` allows (f16 operands) and the weight's
/// values are within f16's range (SPEC section 6's guard on the weights).
#[allow(clippy::too_many_arguments)]
fn gemm<'a>(ctx: &WgpuContext, w: &'a Resident, io: MatvecIo<'a>, cols: u32, batch: u32, units: bool, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    let total_rows: u32 = w.chunks.iter().map(|c| c.rows).sum();
    if io.variant.x == XMode::Int8Norm {
        return Err("the GEMM takes no deferred RMS scale (x-mode Int8Norm)".into());
    }
    let int8 = io.variant.x.int8();
    let (pipe, (tile_rows, tile_cols)) = ctx.gemm_pipeline(w.codec, int8, units && w.value_bound <= F16_GUARD)?;
    for c in &w.chunks {
        let p = MatvecParams { rows: c.rows, units: c.units, a: c.regions[0], b: c.regions[1], c: c.regions[2], x_stride: cols / 4, y_base: io.y_base, y_stride: total_rows, y_off: c.row0, grid_x: 0, eps: 0.0, batch };
        let at = params.slot(bytemuck::bytes_of(&p));
        // Int8 activations: the units in x, their scales in x2.
        let x2 = if int8 { io.x2.ok_or("int8 activations come with their scales")? } else { io.x };
        out.push(Planned { label: "gemm", pipe: pipe.clone(), bufs: vec![&c.buf, &c.buf, io.x, x2, io.y], uniform: Uniform::Slot(at), grid: Grid::Fixed(c.rows.div_ceil(tile_rows), batch.div_ceil(tile_cols), 1) });
    }
    Ok(())
}

/// Y (batch, rows) = X . W^T by whichever kernel suits the batch: the tiled GEMM from
/// `GEMM_MIN_BATCH` columns (widths of whole 32-value slices; `units`: as `gemm`), a matvec
/// per column below.
#[allow(clippy::too_many_arguments)]
pub(super) fn matmul<'a>(ctx: &WgpuContext, w: &'a Resident, io: MatvecIo<'a>, cols: u32, batch: u32, units: bool, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    if batch >= GEMM_MIN_BATCH && cols.is_multiple_of(32) {
        gemm(ctx, w, io, cols, batch, units, params, out)
    } else {
        matvec(ctx, w, io, cols, batch, params, out)
    }
}

/// g <- act(g) * u over n floats.
pub(super) fn act<'a>(ctx: &WgpuContext, g: &'a wgpu::Buffer, u: &'a wgpu::Buffer, n: u32, act: u32, params: &mut Params, out: &mut Vec<Planned<'a>>) {
    let (gx, gy) = grid(n.div_ceil(256));
    let at = params.slot(bytemuck::bytes_of(&ActParams { n, act, grid_x: gx, pad: 0 }));
    out.push(Planned { label: "act", pipe: ctx.act.clone(), bufs: vec![g, u], uniform: Uniform::Slot(at), grid: Grid::Fixed(gx, gy, 1) });
}

/// The bind group of every planned dispatch (`params` holds the plan's uniform slots).
pub(super) fn bind(device: &wgpu::Device, plan: &[Planned], params: &wgpu::Buffer) -> Vec<wgpu::BindGroup> {
    plan.iter()
        .map(|p| {
            let mut entries: Vec<wgpu::BindGroupEntry> = p.bufs.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect();
            let resource = match p.uniform {
                Uniform::Slot(at) => wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: params, offset: at, size: wgpu::BufferSize::new(PARAM_SLOT) }),
                Uniform::Whole(b) => b.as_entire_binding(),
            };
            entries.push(wgpu::BindGroupEntry { binding: p.bufs.len() as u32, resource });
            device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &p.pipe.get_bind_group_layout(0), entries: &entries })
        })
        .collect()
}

/// Encode dispatches into one compute pass (`chunks`: the attention grid of this token);
/// with `stamps`, a timestamp before each dispatch and one after the last.
pub(super) fn encode<'p>(pass: &mut wgpu::ComputePass, dispatches: impl Iterator<Item = (&'p wgpu::ComputePipeline, &'p wgpu::BindGroup, Grid)>, chunks: u32, stamps: Option<&wgpu::QuerySet>) {
    let mut n = 0;
    for (pipe, group, grid) in dispatches {
        if let Some(q) = stamps {
            pass.write_timestamp(q, n);
        }
        n += 1;
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, group, &[]);
        match grid {
            Grid::Fixed(x, y, z) => pass.dispatch_workgroups(x, y, z),
            Grid::HeadsByChunks(heads) => pass.dispatch_workgroups(heads, chunks, 1),
        }
    }
    if let Some(q) = stamps {
        pass.write_timestamp(q, n);
    }
}
