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
    let mut params: Vec<*mut std::ffi::c_void> = args.values.iter().map(|v| v as *const u64 as *mut std::ffi::c_void).collect();
    // SAFETY: a zeroed attribute is a valid "ignore" value; the one field set is the union
    // member the attribute id names.
    let mut attr: CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: overlap as u32,
    };
    stream.context().bind_to_thread()?;
    // SAFETY: the caller vouches for the parameters; `params` points into `args.values`,
    // which outlives the call, and `attr` lives until it returns.
    unsafe { sys::cuLaunchKernelEx(&config, f.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }.result()
}
