//! The graphs' greedy pick on the device (kernels/argmax*.wgsl): per 4096 logits a workgroup's
//! best candidate, then one workgroup's pick among them, by `sample::argmax`'s rule.

use super::plan::{self, Grid, Params, Planned, Uniform};
use super::WgpuContext;
use wgpu::util::DeviceExt;

/// Logits one argmax.wgsl workgroup takes (256 invocations, 16 each).
const GROUP_SLICE: usize = 256 * 16;

/// `ArgmaxParams` in argmax_pick.wgsl.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ArgmaxBlock {
    n: u32,
    groups: u32,
    pad: [u32; 2],
}

/// Workgroups of the first pass over `n` logits (the length of its `part` buffer in
/// candidates of two u32 each).
pub(super) fn groups(n: usize) -> usize {
    n.div_ceil(GROUP_SLICE).max(1)
}

/// The two dispatches that pick the argmax of `logits` (n floats) into `best` ((1) u32),
/// through `part` ((groups(n), 2) u32), their uniform block added to `params`.
pub(super) fn plan<'b>(ctx: &WgpuContext, logits: &'b wgpu::Buffer, part: &'b wgpu::Buffer, best: &'b wgpu::Buffer, n: usize, params: &mut Params, p: &mut Vec<Planned<'b>>) {
    let g = groups(n) as u32;
    let at = params.slot(bytemuck::bytes_of(&ArgmaxBlock { n: n as u32, groups: g, pad: [0; 2] }));
    p.push(Planned { label: "argmax", pipe: ctx.argmax.clone(), bufs: vec![logits, part], uniform: Uniform::Slot(at), grid: Grid::Fixed(g, 1, 1) });
    p.push(Planned { label: "argmax", pipe: ctx.argmax_merge.clone(), bufs: vec![part, best], uniform: Uniform::Slot(at), grid: Grid::Fixed(1, 1, 1) });
}

impl super::WgpuBackend {
    /// The device's greedy pick of `values` (for the parity tests): `sample::argmax`'s index.
    pub fn argmax(&self, values: &[f32]) -> Result<u32, String> {
        if values.is_empty() || values.len() >= u32::MAX as usize / 2 {
            return Err(format!("argmax of {} values: outside the kernels' range", values.len()));
        }
        let ctx = &self.ctx;
        let dev = &ctx.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let logits = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("logits"), contents: bytemuck::cast_slice(values), usage: wgpu::BufferUsages::STORAGE });
        let part = self.storage_buf("argmax part", 2 * groups(values.len()));
        let best = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("best"), contents: bytemuck::bytes_of(&u32::MAX), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
        let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("best read"), size: 4, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let (mut params, mut p) = (Params::default(), Vec::new());
        plan(ctx, &logits, &part, &best, values.len(), &mut params, &mut p);
        let pbuf = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("argmax params"), contents: &params.0, usage: wgpu::BufferUsages::UNIFORM });
        let groups_bound = plan::bind(dev, &p, &pbuf);
        let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("argmax") });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("argmax"), timestamp_writes: None });
            plan::encode(&mut pass, p.iter().zip(&groups_bound).map(|(d, g)| (&d.pipe, g, d.grid)), 0, None);
        }
        enc.copy_buffer_to_buffer(&best, 0, &read, 0, 4);
        ctx.queue.submit([enc.finish()]);
        let picked = ctx.read_back::<u32>(&read, 1);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(format!("argmax: {e}"));
        }
        Ok(picked?[0])
    }
}
