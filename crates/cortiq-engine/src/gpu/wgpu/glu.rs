//! The int8 token graph's gate and up matvecs with down's int8 input as their output
//! (glu_q8.wgsl): one dispatch where there were two links of the chain, the gate/up matvecs
//! and then the quantizer of silu(gate) * up (quant.wgsl, mode 1).

use super::context::{QUANT_UNIT, Q8_CODECS};
use super::multi::{codec_copies, params_block, MultiParams, MAX_MATRICES};
use super::plan::{grid, Grid, MatvecParams, Params, Planned, Uniform};
use super::{Resident, WgpuContext};
use crate::gpu::backend::WeightArg;

const GLU_Q8: &str = include_str!("kernels/glu_q8.wgsl");

/// Invocations a workgroup (glu_q8.wgsl's `@workgroup_size`).
const INVOCATIONS: u32 = 256;

/// Storage buffers the dispatch binds: each weight twice (by vec4 and by word), x's values
/// and scales, the hidden state's values and scales.
pub(super) const STORAGE_BINDINGS: u32 = 8;

/// Rows of both matrices a row group takes (32 / R groups of 8 R invocations each) for x of
/// `units` units, as measured on the H200 (bench/NOTES.md, eighteenth session): 8 where a
/// group's 64 lanes take a row's units in one trip (llama-1b, 64 units: +1 % over 4), else
/// 4 (llama-8b, 128 units: +5 % over 8). `CMF_WGPU_GLU_ROWS=4|8` sets it for every shape.
pub(super) fn rows_per_group(units: u32, setting: Option<u32>) -> u32 {
    setting.unwrap_or(if units <= 64 { 8 } else { 4 })
}

/// The `CMF_WGPU_GLU_ROWS` setting, if it names a built size.
pub(super) fn rows_setting() -> Option<u32> {
    std::env::var("CMF_WGPU_GLU_ROWS").ok().and_then(|v| v.trim().parse().ok()).filter(|r| [4, 8].contains(r))
}

/// Workgroup memory the kernel takes at `rows` rows a group: R / 2 vec4 sums an invocation.
pub(super) fn workgroup_bytes(rows: u32) -> u32 {
    INVOCATIONS * rows / 2 * 16
}

/// The shader for gate and up of codec `suffix` (an int8-activation codec), `rows` rows a
/// row group.
pub(super) fn source(suffix: &str, rows: u32) -> Result<String, String> {
    if rows != 4 && rows != 8 {
        return Err(format!("{rows} rows a row group: 4 or 8 are built"));
    }
    let accs = rows / 2;
    let starts: String = (0..rows).map(|j| format!("let i{j} = (r0 + {j}u) * units; ")).collect();
    let accumulators: String = (0..accs).map(|j| format!("var a{j} = vec4<f32>(0.0); ")).collect();
    // Accumulator j < R / 4: gate rows 4j .. 4j + 3 of the group; then up's.
    let dots: String = (0..accs)
        .map(|j| {
            let m = u32::from(j >= rows / 4);
            let base = 4 * (j % (rows / 4));
            let dot = |i: u32| format!("unit_dot8_m{m}(i{i} + k, xa, xb, xs)");
            format!("a{j} += vec4<f32>({}, {}, {}, {}); ", dot(base), dot(base + 1), dot(base + 2), dot(base + 3))
        })
        .collect();
    let parts_out: String = (0..accs).map(|j| format!("part[{j}u * 256u + lid] = a{j}; ")).collect();
    let parts_add: String = (0..accs).map(|j| format!("part[{j}u * 256u + lid] += part[{j}u * 256u + lid + s]; ")).collect();
    let lanes = INVOCATIONS / (32 / rows);
    // The unit's vec4 i (rows 4i .. 4i + 3): group 4i / R, its sum slot (4i mod R) / 4, the
    // group's first lane.
    let hidden = (0..8u32)
        .map(|i| {
            let (group, slot) = (4 * i / rows, (4 * i % rows) / 4);
            let lane0 = group * lanes;
            format!("silu_mul(part[{}u], part[{}u])", slot * INVOCATIONS + lane0, (slot + rows / 4) * INVOCATIONS + lane0)
        })
        .collect::<Vec<_>>()
        .join(", ");
    let kernel = GLU_Q8
        .replace("LANES_PER_GROUP", &lanes.to_string())
        .replace("ROWS_PER_GROUP", &rows.to_string())
        .replace("PART_VEC4S", &(INVOCATIONS * accs).to_string())
        .replace("ROW_STARTS", &starts)
        .replace("ACCUMULATORS", &accumulators)
        .replace("DOTS", &dots)
        .replace("PARTS_OUT", &parts_out)
        .replace("PARTS_ADD", &parts_add)
        .replace("HIDDEN", &hidden);
    Ok(format!("{}{kernel}\n{}\n{QUANT_UNIT}", params_block()?, codec_copies(2, suffix, true)?))
}

/// Where the dispatch reads x (int8 values and scales) and writes the hidden state.
pub(super) struct GluIo<'a> {
    pub xq: &'a wgpu::Buffer,
    pub xd: &'a wgpu::Buffer,
    pub hq: &'a wgpu::Buffer,
    pub hd: &'a wgpu::Buffer,
}

/// One dispatch of gate and up (same int8-activation codec and shape, each resident in one
/// chunk, rows a multiple of 32) over int8 x into down's int8 input, `rows` rows a row
/// group (None: `rows_per_group`'s choice); an error names why not (the caller then plans
/// the matvecs and the quantizer).
pub(super) fn gate_up_q8<'a>(ctx: &WgpuContext, gate: &'a Resident, up: &'a Resident, io: GluIo<'a>, rows: Option<u32>, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    let (g, u) = match (gate.chunks.as_slice(), up.chunks.as_slice()) {
        ([g], [u]) => (g, u),
        _ => return Err("gate or up split into row chunks".into()),
    };
    if gate.codec != up.codec || !Q8_CODECS.contains(&gate.codec) {
        return Err(format!("gate and up are {} and {}: one int8-activation codec is needed", gate.codec, up.codec));
    }
    if g.rows != u.rows || !g.rows.is_multiple_of(32) || g.units != u.units {
        return Err("gate and up differ in shape, or their rows are not whole 32-value units".into());
    }
    let pipe = ctx.glu_pipeline(gate.codec, rows_per_group(g.units, rows))?;
    let (gx, gy) = grid(g.rows / 32);
    let mut block = MultiParams { p: [bytemuck::Zeroable::zeroed(); MAX_MATRICES], starts: [0; 4] };
    for (m, c) in [g, u].into_iter().enumerate() {
        block.p[m] = MatvecParams { rows: c.rows, units: c.units, a: c.regions[0], b: c.regions[1], c: c.regions[2], x_stride: c.units * 8, y_base: 0, y_stride: c.rows, y_off: 0, grid_x: gx, eps: 0.0, batch: 1 };
    }
    let at = params.slot(bytemuck::bytes_of(&block));
    out.push(Planned { label: "gate, up (int8 x, int8 out)", pipe, bufs: vec![&g.buf, &g.buf, &u.buf, &u.buf, io.xq, io.xd, io.hq, io.hd], uniform: Uniform::Slot(at), grid: Grid::Fixed(gx, gy, 1) });
    Ok(())
}

impl super::WgpuBackend {
    /// Test hook: x (one row, `cols` values) quantized by the CPU path's rule, then gate and up
    /// (same codec, rows a multiple of 32) through the gate/up-to-int8 kernel at
    /// `rows_per_group` rows a row group (4 or 8): per 32 rows the hidden state's int8 values
    /// and (d, d * sum, sum, 0). The outputs are poisoned (0x7F bytes, NaN scales) before it
    /// runs.
    pub fn gate_up_q8(&self, gate: &WeightArg, up: &WeightArg, x: &[f32], rows_per_group: u32) -> Result<(Vec<i8>, Vec<[f32; 4]>), String> {
        Self::supported(&[gate, up], 1).map_err(str::to_string)?;
        let (rows, cols) = (gate.view.rows, gate.view.cols);
        if x.len() != cols || up.view.rows != rows || up.view.cols != cols || !rows.is_multiple_of(32) {
            return Err("gate and up must be one shape, rows a multiple of 32, x one row of it".into());
        }
        let mut map = self.weights.lock().unwrap_or_else(|e| e.into_inner());
        self.ensure(&mut map, &[gate, up]).map_err(|u| u.why().to_string())?;
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let (xq, xd, _) = self.upload_q8(&mut scratch, x, cols)?;
        let (hq, hd) = self.poisoned_units(rows);
        let mut params = Params::default();
        let mut plan = Vec::new();
        gate_up_q8(&self.ctx, &map[&gate.key], &map[&up.key], GluIo { xq: &xq, xd: &xd, hq: &hq, hd: &hd }, Some(rows_per_group), &mut params, &mut plan)?;
        self.run_into_units("wgpu gate/up to int8", &plan, &params, (&hq, &hd), rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_fits_the_webgpu_minimum_workgroup_memory() {
        for rows in [4, 8] {
            assert!(workgroup_bytes(rows) <= 16384);
        }
    }

    #[test]
    fn the_hidden_vec4s_are_the_groups_first_lanes_in_row_order() {
        let src = source("q4_0", 8).unwrap();
        // R = 8: 4 groups of 64 lanes; unit vec4 2 (rows 8..11) is group 1's gate slot 0.
        assert!(src.contains("silu_mul(part[0u], part[512u]), silu_mul(part[256u], part[768u]), silu_mul(part[64u], part[576u])"), "{src}");
        let src = source("q8_0", 4).unwrap();
        assert!(src.contains("silu_mul(part[0u], part[256u]), silu_mul(part[32u], part[288u])"), "{src}");
        assert!(source("q4_0", 16).is_err());
    }
}
