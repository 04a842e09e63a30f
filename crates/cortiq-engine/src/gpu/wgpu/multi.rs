//! Several matrices over one input in one dispatch: the token graph's Q, K and V, its gate
//! and up. Inside one compute pass each matvec dispatch waits for the one before it (measured
//! on the H200: ~5.5 us a matvec dispatch at any size on the small models, so smollm2's QKV
//! stage cost 17 us a layer for three 576-column matrices). Here the workgroups of one
//! dispatch are split between the matrices; the shader is the matvec kernel repeated per
//! matrix, each copy over its own weight, output and uniform block, the copies' codec
//! functions renamed apart (WGSL has no pointers to storage buffers to pass instead).

use super::context::{matvec_kernel, reduce_source, MatvecShape, Variant, CODECS, CODECS_Q8, SILU4, WEIGHTS_IO};
use super::plan::{grid, Grid, MatvecIo, MatvecParams, Params, Planned, Uniform};
use super::{Resident, WgpuContext};

/// Most matrices one dispatch takes.
pub(super) const MAX_MATRICES: usize = 3;

/// Storage buffers a dispatch of `n` matrices binds: each weight twice (by vec4 and by word),
/// x and x2, and `n` outputs.
pub(super) fn storage_bindings(n: usize) -> u32 {
    (3 * n + 2) as u32
}

/// The uniform block: each matrix's matvec parameters, then the first workgroup of each
/// matrix (x, y, z) and the total (w).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct MultiParams {
    pub p: [MatvecParams; MAX_MATRICES],
    pub starts: [u32; 4],
}

/// `src` with every `from` that does not continue an identifier replaced by `to`.
fn renamed(src: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(i) = rest.find(from) {
        let before = if i > 0 { rest[..i].chars().last() } else { out.chars().last() };
        let joins = before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if joins { from } else { to });
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// Functions `src` defines (top-level `fn name(` lines).
fn defined_fns(src: &str) -> Vec<&str> {
    src.lines().filter_map(|l| l.strip_prefix("fn ")).filter_map(|l| l.split('(').next()).collect()
}

/// `src` (kernel or codec code) for matrix `m`: its uniform block, weight and output bindings
/// and the functions in `fns` renamed to matrix m's own.
fn for_matrix(src: &str, m: usize, fns: &[&str]) -> String {
    let mut s = renamed(src, "p.", &format!("mp.p[{m}]."));
    for (from, to) in [("wq[", format!("wq{m}[")), ("ws[", format!("ws{m}[")), ("y[", format!("y{m}[")), ("unit_dot(", format!("unit_dot_m{m}(")), ("unit_dot8(", format!("unit_dot8_m{m}("))] {
        s = renamed(&s, from, &to);
    }
    for f in fns {
        s = renamed(&s, &format!("{f}("), &format!("{f}_m{m}("));
    }
    s
}

/// weights_io.wgsl's `Params` block (the uniform block of one matrix).
pub(super) fn params_block() -> Result<&'static str, String> {
    WEIGHTS_IO.find("struct Params").and_then(|i| WEIGHTS_IO[i..].find("}\n").map(|j| &WEIGHTS_IO[i..i + j + 2])).ok_or_else(|| "weights_io.wgsl has no Params block".to_string())
}

/// The codec functions of matrices 0..n in one shader: the X8 block once, then each matrix's
/// copy over its own bindings, with `unit_dot_m{m}` (or `unit_dot8_m{m}` for int8 x) calling
/// codec `suffix`'s dot.
pub(super) fn codec_copies(n: usize, suffix: &str, int8: bool) -> Result<String, String> {
    let codecs = if int8 { format!("{CODECS}\n{CODECS_Q8}") } else { CODECS.to_string() };
    let x8_start = codecs.find("struct X8").ok_or("codecs.wgsl has no X8 block")?;
    let x8_end = codecs[x8_start..].find("}\n").map(|j| x8_start + j + 2).ok_or("codecs.wgsl's X8 block is not closed")?;
    let mut s = codecs[x8_start..x8_end].to_string();
    let functions = format!("{}{}", &codecs[..x8_start], &codecs[x8_end..]);
    let fns = defined_fns(&functions);
    for m in 0..n {
        s += &for_matrix(&functions, m, &fns);
        s += &if int8 {
            format!("fn unit_dot8_m{m}(n: u32, xa: vec4<u32>, xb: vec4<u32>, xd: vec4<f32>) -> f32 {{ return unit_dot8_{suffix}_m{m}(n, xa, xb, xd); }}\n")
        } else {
            format!("fn unit_dot_m{m}(n: u32, r: u32, xs: X8, xsum: f32) -> f32 {{ return unit_dot_{suffix}_m{m}(n, r, xs, xsum); }}\n")
        };
    }
    Ok(s)
}

/// The shader of an `n`-matrix dispatch (2..=MAX_MATRICES) for one codec (`suffix`, `vec4s`
/// x vec4s a unit) and variant: workgroup `lin` of the dispatch runs matrix m's matvec kernel
/// for its rows `(lin - starts[m]) * ROWS ..`.
pub(super) fn multi_source(n: usize, suffix: &str, vec4s: u32, subgroups: bool, shape: MatvecShape, variant: Variant) -> Result<String, String> {
    if !(2..=MAX_MATRICES).contains(&n) {
        return Err(format!("{n} matrices in one dispatch: 2 to {MAX_MATRICES} are built"));
    }
    let int8 = variant.x.int8();
    let kernel = matvec_kernel(vec4s, subgroups, shape, variant);
    let at = kernel.find("@compute").ok_or("the matvec kernel has no entry point")?;
    let (head, entry) = kernel.split_at(at);
    let open = entry.find(") {").ok_or("the matvec entry point has no body")? + 3;
    let close = entry.rfind('}').ok_or("the matvec entry point is not closed")?;
    let (signature, body) = (&entry[..open], &entry[open..close]);
    let first_row = "(wg.y * p.grid_x + wg.x)";
    if !body.contains(first_row) {
        return Err("the matvec kernel's first row is not where the multi-matrix shader expects it".into());
    }
    let params = params_block()?;
    let x_type = if int8 { "vec4<u32>" } else { "vec4<f32>" };
    let mut s = String::new();
    if !int8 {
        s += &format!("const UNIT_VEC4: u32 = {vec4s}u;\n");
    }
    s += params;
    s += &format!("struct Multi {{ p: array<Params, {MAX_MATRICES}>, starts: vec4<u32>, }}\n");
    for m in 0..n {
        s += &format!("@group(0) @binding({}) var<storage, read> wq{m}: array<vec4<u32>>;\n@group(0) @binding({}) var<storage, read> ws{m}: array<u32>;\n", 2 * m, 2 * m + 1);
    }
    s += &format!("@group(0) @binding({}) var<storage, read> x: array<{x_type}>;\n@group(0) @binding({}) var<storage, read> x2: array<vec4<f32>>;\n", 2 * n, 2 * n + 1);
    for m in 0..n {
        s += &format!("@group(0) @binding({}) var<storage, read_write> y{m}: array<f32>;\n", 2 * n + 2 + m);
    }
    s += &format!("@group(0) @binding({}) var<uniform> mp: Multi;\n", 3 * n + 2);
    s += head;
    s += signature;
    s += "\n    let lin = wg.y * mp.p[0].grid_x + wg.x;\n";
    for m in 0..n {
        let branch = match m {
            0 => "    if (lin < mp.starts[1]) {".to_string(),
            m if m + 1 == n => " else {".to_string(),
            m => format!(" else if (lin < mp.starts[{}]) {{", m + 1),
        };
        s += &branch;
        s += &for_matrix(&body.replace(first_row, &format!("(lin - mp.starts[{m}])")), m, &[]);
        s += "    }";
    }
    s += "\n}\n";
    s += &codec_copies(n, suffix, int8)?;
    if !int8 {
        s += SILU4;
        s += "\n";
    }
    s += reduce_source(subgroups);
    Ok(s)
}

/// What a multi-matrix dispatch reads and writes: x (cols) and its second input (the norm
/// weights for a norm-fused variant, the int8 scales for int8 x; x itself for plain), and
/// each matrix's output (from float 0).
pub(super) struct MultiIo<'a> {
    pub x: &'a wgpu::Buffer,
    pub x2: Option<&'a wgpu::Buffer>,
    pub ys: Vec<&'a wgpu::Buffer>,
    pub variant: Variant,
    pub eps: f32,
}

impl<'a> MultiIo<'a> {
    /// The input side of a single matvec's `io` (whose output starts at float 0), into the
    /// outputs `ys`.
    pub fn like(io: MatvecIo<'a>, ys: Vec<&'a wgpu::Buffer>) -> MultiIo<'a> {
        debug_assert_eq!(io.y_base, 0, "a multi-matrix dispatch writes each output from float 0");
        MultiIo { x: io.x, x2: io.x2, ys, variant: io.variant, eps: io.eps }
    }
}

/// One dispatch for the matvecs of `ws` (same codec, `cols` columns, each resident in one
/// chunk) over one input, batch 1; an error names why they cannot share one (the caller
/// then plans a matvec each).
pub(super) fn matvecs<'a>(ctx: &WgpuContext, ws: &[&'a Resident], io: MultiIo<'a>, cols: u32, params: &mut Params, out: &mut Vec<Planned<'a>>) -> Result<(), String> {
    let n = ws.len();
    if n != io.ys.len() {
        return Err(format!("{n} weights but {} outputs", io.ys.len()));
    }
    let codec = ws.first().map(|w| w.codec).ok_or("no matrices")?;
    let mut chunks = Vec::with_capacity(n);
    for w in ws {
        match w.chunks.as_slice() {
            [c] if w.codec == codec => chunks.push(c),
            [_] => return Err(format!("codecs differ ({codec}, {})", w.codec)),
            _ => return Err("a weight split into row chunks".into()),
        }
    }
    let widest = chunks.iter().map(|c| c.rows).max().unwrap_or(0);
    let (pipe, shape) = ctx.multi_pipeline(codec, n, widest, cols, io.variant)?;
    let mut starts = [0u32; 4];
    for (m, c) in chunks.iter().enumerate() {
        starts[m + 1] = starts[m] + c.rows.div_ceil(shape.rows);
    }
    let total = starts[n];
    starts[n..].fill(total);
    let (gx, gy) = grid(total);
    let mut block = MultiParams { p: [bytemuck::Zeroable::zeroed(); MAX_MATRICES], starts };
    for (m, c) in chunks.iter().enumerate() {
        block.p[m] = MatvecParams { rows: c.rows, units: c.units, a: c.regions[0], b: c.regions[1], c: c.regions[2], x_stride: cols / 4, y_base: 0, y_stride: c.rows, y_off: 0, grid_x: gx, eps: io.eps, batch: 1 };
    }
    let at = params.slot(bytemuck::bytes_of(&block));
    let mut bufs: Vec<&wgpu::Buffer> = chunks.iter().flat_map(|c| [&c.buf, &c.buf]).collect();
    bufs.extend([io.x, io.x2.unwrap_or(io.x)]);
    bufs.extend(io.ys);
    out.push(Planned { label: "matvecs", pipe, bufs, uniform: Uniform::Slot(at), grid: Grid::Fixed(gx, gy, 1) });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_leaves_longer_identifiers_alone() {
        assert_eq!(renamed("p.a + xp.b + (p.c)", "p.", "q."), "q.a + xp.b + (q.c)");
        assert_eq!(renamed("y[i] = yy[i] + y[0]", "y[", "y1["), "y1[i] = yy[i] + y1[0]");
        assert_eq!(renamed("half_at(a) + my_half_at(b)", "half_at(", "half_at_m1("), "half_at_m1(a) + my_half_at(b)");
    }

    #[test]
    fn the_uniform_block_fits_one_slot() {
        assert!(std::mem::size_of::<MultiParams>() <= 256);
        assert_eq!(std::mem::size_of::<MatvecParams>() % 16, 0, "Params array elements are 16-byte aligned in a uniform block");
    }
}
