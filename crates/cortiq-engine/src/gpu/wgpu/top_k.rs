//! The sampler's candidates picked on the device after a graph's head (kernels/topk_*.wgsl):
//! a sampled token reads back k keys (`gpu::candidates`) instead of the vocabulary's logits.

use super::context::WgpuContext;
use crate::gpu::candidates::{candidates, DEVICE_TOP_K_MAX};
use wgpu::util::DeviceExt;

/// Logits one `topk_groups` workgroup takes (256 invocations, 16 each).
const GROUP_SLICE: usize = 256 * 16;

/// The kernels' uniform block (`TopKParams` in topk_keys.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct TopKParams {
    n: u32,
    k: u32,
    groups: u32,
    pad: u32,
}

/// The picks' buffers over one logits buffer, and the bind groups of their two dispatches.
pub(super) struct DeviceTopK {
    n: u32,
    groups: u32,
    keys: wgpu::Buffer,    // (DEVICE_TOP_K_MAX) vec2<u32> keys, descending
    staging: wgpu::Buffer, // MAP_READ copy of `keys`
    params: wgpu::Buffer,  // TopKParams
    bind: [wgpu::BindGroup; 2],
}

impl DeviceTopK {
    /// Buffers for the picks over `logits` (n floats).
    pub fn new(ctx: &WgpuContext, logits: &wgpu::Buffer, n: usize) -> DeviceTopK {
        let dev = &ctx.device;
        let groups = n.div_ceil(GROUP_SLICE).max(1);
        let storage = |label, bytes: usize| dev.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes as u64, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        let part = storage("top-k part", groups * DEVICE_TOP_K_MAX * 8); // (groups, DEVICE_TOP_K_MAX) keys
        let keys = storage("top-k keys", DEVICE_TOP_K_MAX * 8);
        let staging = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("top-k read"), size: (DEVICE_TOP_K_MAX * 8) as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let block = TopKParams { n: n as u32, k: 1, groups: groups as u32, pad: 0 };
        let params = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("top-k params"), contents: bytemuck::bytes_of(&block), usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST });
        let group = |pipe: &wgpu::ComputePipeline, input: &wgpu::Buffer, output: &wgpu::Buffer| {
            let entries = [input, output, &params].iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect::<Vec<_>>();
            dev.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("top-k"), layout: &pipe.get_bind_group_layout(0), entries: &entries })
        };
        let bind = [group(&ctx.topk_groups, logits, &part), group(&ctx.topk_merge, &part, &keys)];
        DeviceTopK { n: n as u32, groups: groups as u32, keys, staging, params, bind }
    }

    /// Both dispatches into an open pass (after the head), and `k` (1..=DEVICE_TOP_K_MAX) set
    /// for the next submission.
    pub fn encode(&self, ctx: &WgpuContext, pass: &mut wgpu::ComputePass, k: usize) {
        let block = TopKParams { n: self.n, k: k as u32, groups: self.groups, pad: 0 };
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&block));
        pass.set_pipeline(&ctx.topk_groups);
        pass.set_bind_group(0, &self.bind[0], &[]);
        pass.dispatch_workgroups(self.groups, 1, 1);
        pass.set_pipeline(&ctx.topk_merge);
        pass.set_bind_group(0, &self.bind[1], &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }

    /// Copy the k keys out for `read` (after the pass).
    pub fn copy_out(&self, enc: &mut wgpu::CommandEncoder, k: usize) {
        enc.copy_buffer_to_buffer(&self.keys, 0, &self.staging, 0, (k * 8) as u64);
    }

    /// The k candidates, as `sample::top_candidates` gives them (fewer when fewer logits are
    /// finite), once the submission that copied them out has run.
    pub fn read(&self, ctx: &WgpuContext, k: usize) -> Result<Vec<(u32, f32)>, String> {
        let words = ctx.read_back::<u32>(&self.staging, 2 * k as u64)?;
        Ok(candidates(words.chunks_exact(2).map(|w| ((w[0] as u64) << 32) | w[1] as u64)))
    }
}

impl super::WgpuBackend {
    /// The k (1..=DEVICE_TOP_K_MAX) largest finite values of `values` picked by the device
    /// kernels, as `sample::top_candidates` gives them (for the parity tests).
    pub fn top_k(&self, values: &[f32], k: usize) -> Result<Vec<(u32, f32)>, String> {
        if values.is_empty() || !(1..=DEVICE_TOP_K_MAX).contains(&k) {
            return Err(format!("top-{k} of {} values: outside the picks' range", values.len()));
        }
        let ctx = &self.ctx;
        let dev = &ctx.device;
        let scope = dev.push_error_scope(wgpu::ErrorFilter::Validation);
        let logits = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("logits"), contents: bytemuck::cast_slice(values), usage: wgpu::BufferUsages::STORAGE });
        let top = DeviceTopK::new(ctx, &logits, values.len());
        let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("top-k") });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("top-k"), timestamp_writes: None });
            top.encode(ctx, &mut pass, k);
        }
        top.copy_out(&mut enc, k);
        ctx.queue.submit([enc.finish()]);
        let picked = top.read(ctx, k);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(format!("top-k: {e}"));
        }
        picked
    }
}
