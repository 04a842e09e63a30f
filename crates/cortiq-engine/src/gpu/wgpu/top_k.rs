//! The sampler's candidates picked on the device after a graph's head (kernels/topk_*.wgsl):
//! a sampled token reads back k keys (`gpu::candidates`) instead of the vocabulary's logits,
//! and where the sampler's draw spec is given the device also draws the next token from them
//! (inside the merge: topk_draw.wgsl), so it can be queued before the host has drawn.

use super::context::WgpuContext;
use crate::gpu::candidates::{candidates, PickedAndDrawn, DEVICE_TOP_K_MAX};
use crate::sample::DrawSpec;
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
    draw: u32,
}

/// The draw's uniform block (`DrawParams` in topk_draw.wgsl).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DrawParams {
    temperature: f32,
    min_p: f32,
    top_p: f32,
    u: f32,
}

/// The picks' buffers over one logits buffer, and the bind groups of their two dispatches
/// (the merge drawing into `best`).
pub(super) struct DeviceTopK {
    n: u32,
    groups: u32,
    keys: wgpu::Buffer,   // (DEVICE_TOP_K_MAX) vec2<u32> keys, descending
    params: wgpu::Buffer, // TopKParams
    draw: wgpu::Buffer,   // DrawParams
    bind: [wgpu::BindGroup; 2],
}

/// A MAP_READ buffer that one call's keys are copied into (`DeviceTopK::copy_out`).
pub(super) fn key_staging(ctx: &WgpuContext) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("top-k read"), size: (DEVICE_TOP_K_MAX * 8) as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false })
}

impl DeviceTopK {
    /// Buffers for the picks over `logits` (n floats), the draw writing its token to `best`
    /// ((1) u32).
    pub fn new(ctx: &WgpuContext, logits: &wgpu::Buffer, best: &wgpu::Buffer, n: usize) -> DeviceTopK {
        let dev = &ctx.device;
        let groups = n.div_ceil(GROUP_SLICE).max(1);
        let storage = |label, bytes: usize| dev.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes as u64, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        let part = storage("top-k part", groups * DEVICE_TOP_K_MAX * 8); // (groups, DEVICE_TOP_K_MAX) keys
        let keys = storage("top-k keys", DEVICE_TOP_K_MAX * 8);
        let uniform = |label, bytes: &[u8]| dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytes, usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST });
        let params = uniform("top-k params", bytemuck::bytes_of(&TopKParams { n: n as u32, k: 1, groups: groups as u32, draw: 0 }));
        let draw = uniform("top-k draw", bytemuck::bytes_of(&DrawParams { temperature: 1.0, min_p: 0.0, top_p: 1.0, u: 0.0 }));
        let group = |pipe: &wgpu::ComputePipeline, buffers: &[&wgpu::Buffer]| {
            let entries = buffers.iter().enumerate().map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.as_entire_binding() }).collect::<Vec<_>>();
            dev.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("top-k"), layout: &pipe.get_bind_group_layout(0), entries: &entries })
        };
        let bind = [group(&ctx.topk_groups, &[logits, &part, &params]), group(&ctx.topk_merge, &[&part, &keys, &params, best, &draw])];
        DeviceTopK { n: n as u32, groups: groups as u32, keys, params, draw, bind }
    }

    /// The picks' dispatches into an open pass (after the head), and `k`
    /// (1..=DEVICE_TOP_K_MAX) set for the next submission; with `draw`, the merge also draws
    /// the next token (its parameters from `set_draw`).
    pub fn encode(&self, ctx: &WgpuContext, pass: &mut wgpu::ComputePass, k: usize, draw: bool) {
        let block = TopKParams { n: self.n, k: k as u32, groups: self.groups, draw: draw as u32 };
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&block));
        for ((pipe, bind), gx) in [&ctx.topk_groups, &ctx.topk_merge].into_iter().zip(&self.bind).zip([self.groups, 1]) {
            pass.set_pipeline(pipe);
            pass.set_bind_group(0, bind, &[]);
            pass.dispatch_workgroups(gx, 1, 1);
        }
    }

    /// The draw of the next submission: from its k candidates by `spec`, with the uniform
    /// draw `u`.
    pub fn set_draw(&self, ctx: &WgpuContext, spec: &DrawSpec, u: f32) {
        let block = DrawParams { temperature: spec.temperature, min_p: spec.min_p, top_p: spec.top_p, u };
        ctx.queue.write_buffer(&self.draw, 0, bytemuck::bytes_of(&block));
    }

    /// Copy the k keys out into `staging` (`key_staging`) for `read` (after the pass).
    pub fn copy_out(&self, enc: &mut wgpu::CommandEncoder, k: usize, staging: &wgpu::Buffer) {
        enc.copy_buffer_to_buffer(&self.keys, 0, staging, 0, (k * 8) as u64);
    }
}

/// The k candidates copied into `staging`, as `sample::top_candidates` gives them (fewer
/// when fewer logits are finite), once submission `after` (or every submission) has run.
pub(super) fn read_candidates(ctx: &WgpuContext, staging: &wgpu::Buffer, k: usize, after: Option<wgpu::SubmissionIndex>) -> Result<Vec<(u32, f32)>, String> {
    let words = ctx.read_back_after::<u32>(staging, 2 * k as u64, after)?;
    Ok(candidates(words.chunks_exact(2).map(|w| ((w[0] as u64) << 32) | w[1] as u64)))
}

impl super::WgpuBackend {
    /// The k (1..=DEVICE_TOP_K_MAX) largest finite values of `values` picked by the device
    /// kernels, as `sample::top_candidates` gives them, and with `draw` (a spec and its
    /// uniform draw) the token the device draws from them (for the parity tests).
    pub fn top_k(&self, values: &[f32], k: usize, draw: Option<(&DrawSpec, f32)>) -> Result<PickedAndDrawn, String> {
        if values.is_empty() || !(1..=DEVICE_TOP_K_MAX).contains(&k) {
            return Err(format!("top-{k} of {} values: outside the picks' range", values.len()));
        }
        let ctx = &self.ctx;
        let dev = &ctx.device;
        ctx.validated("top-k", || {
            let logits = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("logits"), contents: bytemuck::cast_slice(values), usage: wgpu::BufferUsages::STORAGE });
            let best = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("drawn"), contents: bytemuck::bytes_of(&u32::MAX), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
            let best_read = dev.create_buffer(&wgpu::BufferDescriptor { label: Some("drawn read"), size: 4, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
            let (top, staging) = (DeviceTopK::new(ctx, &logits, &best, values.len()), key_staging(ctx));
            if let Some((spec, u)) = draw {
                top.set_draw(ctx, spec, u);
            }
            let copy = |enc: &mut wgpu::CommandEncoder| {
                top.copy_out(enc, k, &staging);
                enc.copy_buffer_to_buffer(&best, 0, &best_read, 0, 4);
            };
            ctx.submit_pass("top-k", |pass| top.encode(ctx, pass, k, draw.is_some()), copy);
            let picked = read_candidates(ctx, &staging, k, None)?;
            let drawn = ctx.read_back::<u32>(&best_read, 1)?[0];
            Ok((picked, draw.map(|_| drawn)))
        })
    }
}
