//! The int8 token graph's split attention computing its own query, key and value
//! (attn_qkv.wgsl): no QKV dispatch before it. Inside one compute pass every dispatch waits
//! for the one before (~6 us a dispatch on the H200 at smollm2's sizes, eighteenth session),
//! while a split workgroup redoing its head's head_dim rows of Q over a few hundred columns
//! costs a fraction of that.

use super::plan::{Grid, Params, Planned, Uniform};
use super::q8_out::{int8_block, int8_chunks};
use super::{Resident, WgpuContext};

/// Storage buffers the kernel binds: Q, K and V twice each (by vec4 and by word), x's int8
/// values and scales, the K and V mirrors, the partials.
pub(super) const STORAGE_BINDINGS: u32 = 11;

/// Widest activation row the graph runs this way by default (`CMF_WGPU_QKV_ATTN` unset): a
/// split workgroup streams head_dim rows of Q over this many columns. Measured on the H200
/// (bench/NOTES.md, nineteenth session), tg128 without -> with: 576 columns (smollm2-135m)
/// +6 %, 960 (smollm2-360m) within 0.3 %, 2048 (llama-1b) -13 %.
pub const QKV_ATTN_MAX_COLS: usize = 768;

/// Whether the int8 token graph folds QKV into the attention split: the setting
/// (`CMF_WGPU_QKV_ATTN=1` / `=0`) where there is one, else for rows of up to
/// `QKV_ATTN_MAX_COLS` columns.
pub fn qkv_attn_wanted(setting: Option<bool>, cols: usize) -> bool {
    setting.unwrap_or(cols <= QKV_ATTN_MAX_COLS)
}

/// The attention's shape and buffers: heads, the normed int8 row (x * the norm's weights as
/// units, x's squares in the scales' fourth lane), the layer's K and V mirrors, the
/// partials, the per-token step block, and the norm's epsilon.
pub(super) struct QkvAttnIo<'a> {
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub xq: &'a wgpu::Buffer,
    pub xd: &'a wgpu::Buffer,
    pub kc: &'a wgpu::Buffer,
    pub vc: &'a wgpu::Buffer,
    pub part: &'a wgpu::Buffer,
    pub step: &'a wgpu::Buffer,
    pub eps: f32,
}

/// One dispatch of the split attention over Q, K and V (`ws`: one int8-activation codec,
/// each resident in one chunk, as many rows as the heads take); an error names why not (the
/// caller then plans the QKV matvecs and the plain split).
pub(super) fn plan<'a>(ctx: &WgpuContext, ws: [&'a Resident; 3], io: QkvAttnIo<'a>, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    let hd = io.head_dim;
    if io.n_head_kv == 0 || !io.n_head.is_multiple_of(io.n_head_kv) {
        return Err(format!("{} query heads over {} KV heads", io.n_head, io.n_head_kv));
    }
    let chunks = int8_chunks(&ws)?;
    let rows = [io.n_head * hd, io.n_head_kv * hd, io.n_head_kv * hd];
    if chunks.iter().zip(rows).any(|(c, r)| c.rows as usize != r || c.units != chunks[0].units) {
        return Err("Q, K and V do not have the heads' rows over one row width".into());
    }
    let pipe = ctx.attn_qkv_pipeline(ws[0].codec, hd as u32)?;
    let at = params.slot(bytemuck::bytes_of(&int8_block(&chunks, 0, io.eps)));
    let mut bufs: Vec<&wgpu::Buffer> = chunks.iter().flat_map(|c| [&c.buf, &c.buf]).collect();
    bufs.extend([io.xq, io.xd, io.kc, io.vc, io.part, io.step]);
    out.push(Planned { label: "qkv + attention split (int8 x, rope+kv append)", pipe, bufs, uniform: Uniform::Slot(at), grid: Grid::HeadsByChunks(io.n_head as u32) });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_wins_and_small_rows_take_the_fold_by_default() {
        assert!(qkv_attn_wanted(None, 576));
        assert!(qkv_attn_wanted(None, QKV_ATTN_MAX_COLS));
        assert!(!qkv_attn_wanted(None, 2048));
        assert!(qkv_attn_wanted(Some(true), 4096));
        assert!(!qkv_attn_wanted(Some(false), 576));
    }
}
