//! Matvecs of the int8 token graph that write the next stage's int8 input themselves
//! (q8_out.wgsl), so no quantize dispatch sits between them and their consumer: gate and up
//! into down's input (silu(gate) * up), and the output and down projections adding into the
//! residual stream and writing it, times the next RMSNorm's weights, with its sums of
//! squares (the norm's scale left to the consumer, `XMode::Int8Norm`).

use super::context::{QUANT_UNIT, Q8_CODECS};
use super::multi::{codec_copies, params_block, MultiParams, MAX_MATRICES};
use super::plan::{grid, Grid, MatvecParams, Params, Planned, Uniform};
use super::{Chunk, Resident, WgpuContext};
use crate::gpu::backend::WeightArg;

const Q8_OUT: &str = include_str!("kernels/q8_out.wgsl");

/// A row as int8 units read back by a test hook: the values, and per unit (d, d * sum, sum,
/// fourth lane).
pub type Int8Units = (Vec<i8>, Vec<[f32; 4]>);

/// A workgroup's shape: rows of every matrix a row group takes (32 / rows groups a
/// workgroup) and invocations (q8_out.wgsl's `@workgroup_size`), so invocations * rows / 32
/// lanes a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnitShape {
    pub rows: u32,
    pub invocations: u32,
}

impl UnitShape {
    fn lanes(self) -> u32 {
        self.invocations / (32 / self.rows)
    }
}

/// Storage buffers either kind binds: gate/up: each weight twice (by vec4 and by word), x's
/// values and scales, the output's values and scales; residual: the weight twice, x's values
/// and scales, the output's, r and the norm weights.
pub(super) const STORAGE_BINDINGS: u32 = 8;

/// What the unit of the output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Q8Out {
    /// Gate and up: silu(gate) * up; `normed`: x is an `XMode::Int8Norm` row.
    Glu { normed: bool },
    /// One matrix added into the residual stream, then times the next norm's weights.
    Residual,
}

impl Q8Out {
    fn matrices(self) -> u32 {
        match self {
            Q8Out::Glu { .. } => 2,
            Q8Out::Residual => 1,
        }
    }

    fn normed(self) -> bool {
        matches!(self, Q8Out::Glu { normed: true })
    }

    /// The row-group sizes built for this kind.
    fn sizes(self) -> &'static [u32] {
        match self {
            Q8Out::Glu { .. } => &[4, 8],
            Q8Out::Residual => &[4, 8, 16],
        }
    }

    /// The workgroup shape for x of `units` units: the settings (`UnitSetting`) where they
    /// name a built size, else as measured on the H200 (bench/NOTES.md, eighteenth session):
    /// 256 invocations; gate and up 8 rows a group where a group's 64 lanes take a row's units
    /// in one trip (llama-1b, 64 units: +1 % over 4), else 4 (llama-8b, 128 units: +5 % over
    /// 8); the residual add 16 (+10 % over 8 on both, 8 +3 % over 4, 32 -3-5 % under 16).
    pub fn shape(self, units: u32, setting: UnitSetting) -> UnitShape {
        let rows = match setting.rows {
            Some(r) if self.sizes().contains(&r) => r,
            _ => match self {
                Q8Out::Glu { .. } if units <= 64 => 8,
                Q8Out::Glu { .. } => 4,
                Q8Out::Residual => 16,
            },
        };
        let invocations = match setting.invocations {
            Some(n) if INVOCATIONS_BUILT.contains(&n) => n,
            _ => 256,
        };
        UnitShape { rows, invocations }
    }

    /// Workgroup memory the kernel takes in `shape`.
    pub fn workgroup_bytes(self, shape: UnitShape) -> u32 {
        shape.invocations * shape.rows / 4 * self.matrices() * 16 + shape.invocations * 4 + 16 * 16
    }
}

/// Workgroup sizes the kernels are built for.
const INVOCATIONS_BUILT: [u32; 2] = [256, 512];

/// Settings of a unit-writing kernel's shape (measurement knobs; None: the measured default).
#[derive(Debug, Clone, Copy, Default)]
pub struct UnitSetting {
    pub rows: Option<u32>,
    pub invocations: Option<u32>,
}

impl UnitSetting {
    /// `kind`'s settings from the environment: `CMF_WGPU_GLU_ROWS` / `CMF_WGPU_RESIDUAL_ROWS`
    /// (rows a group), `CMF_WGPU_GLU_INVOCATIONS` / `CMF_WGPU_RESIDUAL_INVOCATIONS`.
    pub(super) fn from_env(kind: Q8Out) -> UnitSetting {
        let name = match kind {
            Q8Out::Glu { .. } => "GLU",
            Q8Out::Residual => "RESIDUAL",
        };
        let read = |what: &str| std::env::var(format!("CMF_WGPU_{name}_{what}")).ok().and_then(|v| v.trim().parse().ok());
        UnitSetting { rows: read("ROWS"), invocations: read("INVOCATIONS") }
    }
}

/// The shader for `kind` over codec `suffix` (an int8-activation codec) in `shape`.
pub(super) fn source(kind: Q8Out, suffix: &str, shape: UnitShape) -> Result<String, String> {
    let UnitShape { rows, invocations } = shape;
    if !kind.sizes().contains(&rows) || !INVOCATIONS_BUILT.contains(&invocations) {
        return Err(format!("{shape:?}: {:?} rows a group and {INVOCATIONS_BUILT:?} invocations are built for {kind:?}", kind.sizes()));
    }
    let m_count = kind.matrices();
    let per = rows / 4; // vec4 sums a matrix, per invocation
    let accs = per * m_count;
    let lanes = shape.lanes();
    let mut bindings = String::new();
    for m in 0..m_count {
        bindings += &format!("@group(0) @binding({}) var<storage, read> wq{m}: array<vec4<u32>>;\n@group(0) @binding({}) var<storage, read> ws{m}: array<u32>;\n", 2 * m, 2 * m + 1);
    }
    let b = 2 * m_count;
    bindings += &format!("@group(0) @binding({b}) var<storage, read> x: array<vec4<u32>>;       // (units, 2) int8 x, 4 values a word\n");
    bindings += &format!("@group(0) @binding({}) var<storage, read> x2: array<vec4<f32>>;      // (units) d, d * sum, sum, 0 or x's squares\n", b + 1);
    bindings += &format!("@group(0) @binding({}) var<storage, read_write> xq: array<vec4<u32>>; // (rows / 32, 2) the output's int8 values\n", b + 2);
    bindings += &format!("@group(0) @binding({}) var<storage, read_write> xd: array<vec4<f32>>; // (rows / 32) their d, d * sum, sum, squares\n", b + 3);
    if kind == Q8Out::Residual {
        bindings += &format!("@group(0) @binding({}) var<storage, read_write> r: array<vec4<f32>>;  // (rows / 4) the residual stream\n", b + 4);
        bindings += &format!("@group(0) @binding({}) var<storage, read> w: array<vec4<f32>>;        // (rows / 4) the next RMSNorm's weights\n", b + 5);
    }
    let next = if kind == Q8Out::Residual { b + 6 } else { b + 4 };
    bindings += &format!("@group(0) @binding({next}) var<uniform> mp: Multi;\n");
    let early = match kind {
        Q8Out::Residual => "var rv = vec4<f32>(0.0); var wv = vec4<f32>(0.0); if (lid < 8u) { rv = r[8u * n + lid]; wv = w[8u * n + lid]; }",
        Q8Out::Glu { normed: true } => "var xss = 0.0;",
        Q8Out::Glu { normed: false } => "",
    };
    let starts: String = (0..rows).map(|j| format!("let i{j} = (r0 + {j}u) * units; ")).collect();
    let accumulators: String = (0..accs).map(|j| format!("var a{j} = vec4<f32>(0.0); ")).collect();
    // Accumulator j: matrix j / per, its group's rows 4 (j mod per) .. + 3.
    let mut dots: String = (0..accs)
        .map(|j| {
            let (m, base) = (j / per, 4 * (j % per));
            let dot = |i: u32| format!("unit_dot8_m{m}(i{i} + k, xa, xb, xs)");
            format!("a{j} += vec4<f32>({}, {}, {}, {}); ", dot(base), dot(base + 1), dot(base + 2), dot(base + 3))
        })
        .collect();
    let mut parts_out: String = (0..accs).map(|j| format!("part[{j}u * WGu + lid] = a{j}; ")).collect();
    let mut parts_add: String = (0..accs).map(|j| format!("part[{j}u * WGu + lid] += part[{j}u * WGu + lid + s]; ")).collect();
    if kind.normed() {
        dots += "xss += xs.w; ";
        parts_out += "squares[lid] = xss; ";
        parts_add += "squares[lid] += squares[lid + s]; ";
    }
    if kind == Q8Out::Residual {
        parts_out += "if (lid < 8u) { kept[lid] = rv; kept[8u + lid] = wv; } ";
    }
    // The unit's vec4 i (rows 4i .. 4i + 3) of matrix m: group 4i / R's first lane, its
    // sum slot m * per + (4i mod R) / 4.
    let sum = |m: u32, i: u32| {
        let (group, slot) = (4 * i / rows, (4 * i % rows) / 4);
        format!("part[{}u]", (m * per + slot) * invocations + group * lanes)
    };
    let unit = match kind {
        Q8Out::Glu { normed } => {
            let scale = if normed { "let sc = inverseSqrt(squares[0] / f32(units * 32u) + mp.p[0].eps); " } else { "let sc = 1.0; " };
            let values = (0..8).map(|i| format!("silu_mul(sc * {}, sc * {})", sum(0, i), sum(1, i))).collect::<Vec<_>>().join(", ");
            format!("{scale}store_unit(n, {values});")
        }
        Q8Out::Residual => {
            let adds: String = (0..8).map(|i| format!("let v{i} = kept[{i}u] + {}; r[8u * n + {i}u] = v{i}; ", sum(0, i))).collect();
            let squares = (0..8).map(|i| format!("dot(v{i}, v{i})")).collect::<Vec<_>>().join(" + ");
            let values = (0..8).map(|i| format!("v{i} * kept[{}u]", 8 + i)).collect::<Vec<_>>().join(", ");
            format!("{adds}store_unit_as(n, {squares}, false, {values});")
        }
    };
    let kernel = Q8_OUT
        .replace("BINDINGS", &bindings)
        .replace("LANES_PER_GROUP", &lanes.to_string())
        .replace("ROWS_PER_GROUP", &rows.to_string())
        .replace("PART_VEC4S", &(invocations * accs).to_string())
        .replace("EARLY", early)
        .replace("ROW_STARTS", &starts)
        .replace("ACCUMULATORS", &accumulators)
        .replace("DOTS", &dots)
        .replace("PARTS_OUT", &parts_out)
        .replace("PARTS_ADD", &parts_add)
        .replace("UNIT", &unit)
        .replace("WG", &invocations.to_string());
    Ok(format!("{}{kernel}\n{}\n{QUANT_UNIT}", params_block()?, codec_copies(m_count as usize, suffix, true)?))
}

/// What a unit-writing matvec reads and writes: x's int8 values and scales, the output's,
/// and for a residual add the residual stream and the next norm's weights; `eps` that norm's
/// (a normed x's, for gate and up).
pub(super) struct Q8OutIo<'a> {
    pub xq: &'a wgpu::Buffer,
    pub xd: &'a wgpu::Buffer,
    pub oq: &'a wgpu::Buffer,
    pub od: &'a wgpu::Buffer,
    pub residual: Option<(&'a wgpu::Buffer, &'a wgpu::Buffer)>,
    pub eps: f32,
}

/// One dispatch of `kind` over `ws` (gate and up, or the one residual matrix: one
/// int8-activation codec and shape, each resident in one chunk, rows a multiple of 32) in
/// the shape `setting` and the defaults give (`Q8Out::shape`); an error names why not (the
/// caller then plans the matvecs and a quantizer).
pub(super) fn plan<'a>(ctx: &WgpuContext, kind: Q8Out, ws: &[&'a Resident], io: Q8OutIo<'a>, setting: UnitSetting, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    if ws.len() != kind.matrices() as usize {
        return Err(format!("{kind:?} takes {} matrices, not {}", kind.matrices(), ws.len()));
    }
    let chunks = int8_chunks(ws)?;
    let first = chunks[0];
    if chunks.iter().any(|c| c.rows != first.rows || c.units != first.units) || !first.rows.is_multiple_of(32) {
        return Err("the matrices differ in shape, or their rows are not whole 32-value units".into());
    }
    if (kind == Q8Out::Residual) != io.residual.is_some() {
        return Err("a residual add needs the residual stream and the norm weights, and only it".into());
    }
    let pipe = ctx.q8_out_pipeline(ws[0].codec, kind, kind.shape(first.units, setting))?;
    let (gx, gy) = grid(first.rows / 32);
    let at = params.slot(bytemuck::bytes_of(&int8_block(&chunks, gx, io.eps)));
    let mut bufs: Vec<&wgpu::Buffer> = chunks.iter().flat_map(|c| [&c.buf, &c.buf]).collect();
    bufs.extend([io.xq, io.xd, io.oq, io.od]);
    if let Some((r, w)) = io.residual {
        bufs.extend([r, w]);
    }
    let label = match kind {
        Q8Out::Glu { .. } => "gate, up (int8 x, int8 out)",
        Q8Out::Residual => "matvec (int8 x, +residual, int8 normed out)",
    };
    out.push(Planned { label, pipe, bufs, uniform: Uniform::Slot(at), grid: Grid::Fixed(gx, gy, 1) });
    Ok(())
}

/// The one resident chunk of each of `ws`, all of one int8-activation codec (the kernels
/// that read int8 x from several whole matrices); an error names what is not so.
pub(super) fn int8_chunks<'a>(ws: &[&'a Resident]) -> Result<Vec<&'a Chunk>, String> {
    ws.iter()
        .map(|w| match w.chunks.as_slice() {
            [c] if w.codec == ws[0].codec && Q8_CODECS.contains(&w.codec) => Ok(c),
            [_] => Err(format!("{}: one int8-activation codec is needed for every matrix", w.codec)),
            _ => Err("a matrix split into row chunks".to_string()),
        })
        .collect()
}

/// The uniform block of those matrices (`int8_chunks`) over int8 x: each one's matvec
/// parameters, `grid_x` workgroups along x, the norm's `eps`.
pub(super) fn int8_block(chunks: &[&Chunk], grid_x: u32, eps: f32) -> MultiParams {
    let mut block = MultiParams { p: [bytemuck::Zeroable::zeroed(); MAX_MATRICES], starts: [0; 4] };
    for (m, c) in chunks.iter().enumerate() {
        block.p[m] = MatvecParams { rows: c.rows, units: c.units, a: c.regions[0], b: c.regions[1], c: c.regions[2], x_stride: c.units * 8, y_base: 0, y_stride: c.rows, y_off: 0, grid_x, eps, batch: 1 };
    }
    block
}

impl super::WgpuBackend {
    /// Test hook: x (one row, `cols` values) quantized by the CPU path's rule, then gate and up
    /// (same codec, rows a multiple of 32) through the gate/up-to-int8 kernel in the shape
    /// `setting` gives: per 32 rows the hidden state's int8 values and (d, d * sum, sum, 0).
    /// The outputs are poisoned (0x7F bytes, NaN scales) before it runs.
    pub fn gate_up_q8(&self, gate: &WeightArg, up: &WeightArg, x: &[f32], setting: UnitSetting) -> Result<Int8Units, String> {
        self.q8_out_hook(Q8Out::Glu { normed: false }, &[gate, up], x, None, setting).map(|(units, _)| units)
    }

    /// Test hook: x quantized by the CPU path's rule, then W . x added into the residual row
    /// `r` and the sum times the norm weights `w` written as int8 units (the residual kernel
    /// in the shape `setting` gives): the units' values, (d, d * sum, sum, the sum's squares)
    /// and the new residual row. Outputs are poisoned first.
    pub fn residual_q8(&self, m: &WeightArg, x: &[f32], r: &[f32], w: &[f32], setting: UnitSetting) -> Result<(Int8Units, Vec<f32>), String> {
        self.q8_out_hook(Q8Out::Residual, &[m], x, Some((r, w)), setting).map(|(units, r)| (units, r.unwrap_or_default()))
    }

    fn q8_out_hook(&self, kind: Q8Out, ws: &[&WeightArg], x: &[f32], residual: Option<(&[f32], &[f32])>, setting: UnitSetting) -> Result<(Int8Units, Option<Vec<f32>>), String> {
        let (rows, cols) = (ws[0].view.rows, ws[0].view.cols);
        if x.len() != cols || !rows.is_multiple_of(32) || residual.is_some_and(|(r, w)| r.len() != rows || w.len() != rows) {
            return Err("the matrices must be one shape, rows a multiple of 32, x one row of it, r and w one column".into());
        }
        self.with_q8_input(ws, 1, x, cols, |resident, xq, xd, _| {
            let (oq, od) = self.poisoned_units(rows);
            let rw = residual.map(|(r, w)| (self.storage_buf("r", rows), self.const_buf("w", w), r));
            if let Some((rb, _, r)) = &rw {
                self.ctx.queue.write_buffer(rb, 0, bytemuck::cast_slice(r));
            }
            let mut params = Params::default();
            let mut planned = Vec::new();
            let io = Q8OutIo { xq, xd, oq: &oq, od: &od, residual: rw.as_ref().map(|(r, w, _)| (r, w)), eps: 0.0 };
            plan(&self.ctx, kind, resident, io, setting, &mut params, &mut planned)?;
            let units = self.run_into_units(&format!("wgpu {kind:?} to int8"), &planned, &params, (&oq, &od), rows)?;
            let r = match &rw {
                Some((rb, _, _)) => Some(self.read_floats(rb, rows)?),
                None => None,
            };
            Ok((units, r))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_shapes_fit_and_settings_outside_the_built_sizes_are_ignored() {
        let none = UnitSetting::default();
        assert_eq!(Q8Out::Glu { normed: false }.shape(64, none), UnitShape { rows: 8, invocations: 256 });
        assert_eq!(Q8Out::Glu { normed: false }.shape(128, none), UnitShape { rows: 4, invocations: 256 });
        assert_eq!(Q8Out::Residual.shape(256, none), UnitShape { rows: 16, invocations: 256 });
        assert_eq!(Q8Out::Glu { normed: true }.shape(128, UnitSetting { rows: Some(16), invocations: Some(384) }), UnitShape { rows: 4, invocations: 256 }, "16 rows are not built for gate and up, nor 384 invocations");
        assert_eq!(Q8Out::Residual.shape(64, UnitSetting { rows: Some(8), invocations: Some(512) }), UnitShape { rows: 8, invocations: 512 });
        let glu = Q8Out::Glu { normed: true };
        assert!(glu.workgroup_bytes(glu.shape(128, none)) <= 16384);
    }

    #[test]
    fn the_unit_vec4s_are_the_groups_first_lanes_in_row_order() {
        let shape = |rows, invocations| UnitShape { rows, invocations };
        let src = source(Q8Out::Glu { normed: false }, "q4_0", shape(8, 256)).unwrap();
        // R = 8: 4 groups of 64 lanes; unit vec4 2 (rows 8..11) is group 1's gate slot 0.
        assert!(src.contains("silu_mul(sc * part[0u], sc * part[512u]), silu_mul(sc * part[256u], sc * part[768u]), silu_mul(sc * part[64u], sc * part[576u])"), "{src}");
        let src = source(Q8Out::Glu { normed: true }, "q8_0", shape(4, 256)).unwrap();
        assert!(src.contains("silu_mul(sc * part[0u], sc * part[256u]), silu_mul(sc * part[32u], sc * part[288u])"), "{src}");
        let src = source(Q8Out::Residual, "q4_1", shape(16, 256)).unwrap();
        // R = 16: 2 groups of 128 lanes; vec4 5 (rows 20..23) is group 1's slot 1.
        assert!(src.contains("let v5 = kept[5u] + part[384u];"), "{src}");
        let src = source(Q8Out::Residual, "q4_1", shape(16, 512)).unwrap();
        // 512 invocations: 2 groups of 256 lanes, the sum slots 512 apart.
        assert!(src.contains("let v5 = kept[5u] + part[768u];") && src.contains("@workgroup_size(512)"), "{src}");
        assert!(source(Q8Out::Glu { normed: false }, "q4_0", shape(16, 256)).is_err());
        assert!(source(Q8Out::Residual, "q4_0", shape(16, 384)).is_err());
    }
}
