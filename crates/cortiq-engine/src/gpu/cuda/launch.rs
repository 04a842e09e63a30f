//! Kernel launches that may overlap the kernel before them (programmatic dependent launch,
//! compute capability 9.0+): the driver starts the next kernel's blocks as soon as every
//! block of the running one has passed its `griddepcontrol.launch_dependents`; the kernels
//! (`pdl_wait_then_release` in matvec.cu) issue their weight loads, which depend on nothing,
//! then wait in `griddepcontrol.wait` for the previous kernel to finish and flush before they
//! read or write anything it touches. Captured into a CUDA graph, the attribute becomes a
//! programmatic edge. cudarc's launch builder sets no launch attributes, so this module
//! builds the parameter array itself.

use cudarc::driver::sys::{self, CUlaunchAttribute, CUlaunchAttributeID, CUlaunchConfig};
use cudarc::driver::{CudaFunction, CudaStream, DevicePtr, DriverError, LaunchConfig};

/// A kernel's parameters in order, each held in the low bytes of a u64 (the driver reads
/// as many bytes at each address as the kernel's parameter takes; the host is little-endian).
#[derive(Default)]
pub(super) struct KernelArgs {
    values: Vec<u64>,
}

impl KernelArgs {
    /// A device buffer's address. The backend runs one stream with cudarc's event tracking
    /// off, so taking the address orders nothing and records nothing.
    pub fn buf<T>(&mut self, b: &impl DevicePtr<T>, stream: &CudaStream) -> &mut Self {
        self.values.push(b.device_ptr(stream).0);
        self
    }

    /// A null pointer parameter.
    pub fn null(&mut self) -> &mut Self {
        self.values.push(0);
        self
    }

    pub fn int(&mut self, v: i32) -> &mut Self {
        self.values.push(v as u32 as u64);
        self
    }

    pub fn long(&mut self, v: i64) -> &mut Self {
        self.values.push(v as u64);
        self
    }

    pub fn float(&mut self, v: f32) -> &mut Self {
        self.values.push(v.to_bits() as u64);
        self
    }
}

/// Queue `f` on `stream` with `args`; `overlap` lets it start while the previous kernel on
/// the stream drains (only where the device has programmatic dependent launch).
///
/// # Safety
/// `args` must match the kernel's parameters in number, order and size, and every buffer
/// must be large enough for what the kernel reads and writes at this configuration.
pub(super) unsafe fn launch(stream: &CudaStream, f: &CudaFunction, cfg: LaunchConfig, args: &KernelArgs, overlap: bool) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe { launch_in_clusters(stream, f, cfg, args, overlap, 1) }
}

/// `launch` with the grid in thread-block clusters of `cluster` blocks along x (1: none;
/// compute capability 9.0+, and above 8 blocks only for a kernel that allows non-portable
/// cluster sizes).
///
/// # Safety
/// As `launch`.
pub(super) unsafe fn launch_in_clusters(stream: &CudaStream, f: &CudaFunction, cfg: LaunchConfig, args: &KernelArgs, overlap: bool, cluster: u32) -> Result<(), DriverError> {
    let mut params: Vec<*mut std::ffi::c_void> = args.values.iter().map(|v| v as *const u64 as *mut std::ffi::c_void).collect();
    let mut attrs = Vec::new();
    if overlap {
        attrs.push(attribute(CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, |a| a.value.programmaticStreamSerializationAllowed = 1));
    }
    if cluster > 1 {
        attrs.push(cluster_dimension(cluster));
    }
    let config = launch_config(stream, cfg, &mut attrs);
    stream.context().bind_to_thread()?;
    // SAFETY: the caller vouches for the parameters; `params` points into `args.values`,
    // which outlives the call, and `attrs` lives until it returns.
    unsafe { sys::cuLaunchKernelEx(&config, f.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }.result()
}

/// Most clusters of `cluster` blocks of `f` at `cfg` the device runs at once (0: none fits).
pub(super) fn active_clusters(stream: &CudaStream, f: &CudaFunction, cfg: LaunchConfig, cluster: u32) -> Result<i32, DriverError> {
    let mut attrs = vec![cluster_dimension(cluster)];
    let config = launch_config(stream, cfg, &mut attrs);
    let mut n = 0;
    stream.context().bind_to_thread()?;
    // SAFETY: `config` and its attribute live until the call returns; `n` is written.
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f.cu_function(), &config) }.result()?;
    Ok(n)
}

/// A launch attribute of `id`, its value set by `set`.
fn attribute(id: CUlaunchAttributeID, set: impl FnOnce(&mut CUlaunchAttribute)) -> CUlaunchAttribute {
    // SAFETY: a zeroed attribute is a valid "ignore" value; `set` writes the union member
    // the id names.
    let mut a: CUlaunchAttribute = unsafe { std::mem::zeroed() };
    a.id = id;
    set(&mut a);
    a
}

/// Clusters of `cluster` blocks along x.
fn cluster_dimension(cluster: u32) -> CUlaunchAttribute {
    attribute(CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, |a| {
        a.value.clusterDim.x = cluster;
        a.value.clusterDim.y = 1;
        a.value.clusterDim.z = 1;
    })
}

/// The driver's launch configuration of `cfg` on `stream` with `attrs`.
fn launch_config(stream: &CudaStream, cfg: LaunchConfig, attrs: &mut [CUlaunchAttribute]) -> CUlaunchConfig {
    CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    }
}
