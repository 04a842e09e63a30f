//! The graphs' greedy pick on the device (kernels/argmax*.wgsl): per 4096 logits a workgroup's
//! best candidate, then one workgroup's pick among them, by `sample::argmax`'s rule; encoded
//! after the head only when a call reads its argmax back.

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

/// The pick's buffers over one logits buffer and the bind groups of its two dispatches,
/// encoded after a graph's head only when its argmax is read back (as `DeviceTopK` is for
/// the sampler's candidates).
pub(super) struct DeviceArgmax {
    groups: u32,
    bind: [wgpu::BindGroup; 2],
    _part: wgpu::Buffer,   // (groups, 2) u32: each group's candidate (value bits, index)
    _params: wgpu::Buffer, // ArgmaxBlock
}

impl DeviceArgmax {
    /// Buffers for the pick of `logits` (n floats) into `best` ((1) u32).
    pub fn new(ctx: &WgpuContext, logits: &wgpu::Buffer, best: &wgpu::Buffer, n: usize) -> DeviceArgmax {
        let dev = &ctx.device;
        let groups = n.div_ceil(GROUP_SLICE).max(1) as u32;
        let part = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("argmax part"), size: 8 * groups as u64, usage: wgpu::BufferUsages::STORAGE, mapped_at_creation: false });
        let params = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("argmax params"), contents: bytemuck::bytes_of(&ArgmaxBlock { n: n as u32, groups, pad: [0; 2] }), usage: wgpu::BufferUsages::UNIFORM });
        let group = |pipe: &wgpu::ComputePipeline, input: &wgpu::Buffer, output: &wgpu::Buffer| {
            let entries = [input, output, &params].iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect::<Vec<_>>();
            dev.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("argmax"), layout: &pipe.get_bind_group_layout(0), entries: &entries })
        };
        let bind = [group(&ctx.argmax, logits, &part), group(&ctx.argmax_merge, &part, best)];
        DeviceArgmax { groups, bind, _part: part, _params: params }
    }

    /// Both dispatches into an open pass (after the head).
    pub fn encode(&self, ctx: &WgpuContext, pass: &mut wgpu::ComputePass) {
        for ((pipe, bind), gx) in [&ctx.argmax, &ctx.argmax_merge].into_iter().zip(&self.bind).zip([self.groups, 1]) {
            pass.set_pipeline(pipe);
            pass.set_bind_group(0, bind, &[]);
            pass.dispatch_workgroups(gx, 1, 1);
        }
    }
}

impl super::WgpuBackend {
    /// The device's greedy pick of `values` (for the parity tests): `sample::argmax`'s index.
    pub fn argmax(&self, values: &[f32]) -> Result<u32, String> {
        if values.is_empty() || values.len() >= u32::MAX as usize / 2 {
            return Err(format!("argmax of {} values: outside the kernels' range", values.len()));
        }
        let ctx = &self.ctx;
        let dev = &ctx.device;
        ctx.validated("argmax", || {
            let logits = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("logits"), contents: bytemuck::cast_slice(values), usage: wgpu::BufferUsages::STORAGE });
            let best = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("best"), contents: bytemuck::bytes_of(&u32::MAX), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
            let read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("best read"), size: 4, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
            let pick = DeviceArgmax::new(ctx, &logits, &best, values.len());
            ctx.submit_pass("argmax", |pass| pick.encode(ctx, pass), |enc| enc.copy_buffer_to_buffer(&best, 0, &read, 0, 4));
            Ok(ctx.read_back::<u32>(&read, 1)?[0])
        })
    }
}
