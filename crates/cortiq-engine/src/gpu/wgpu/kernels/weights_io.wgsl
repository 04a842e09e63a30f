// What the matvec and GEMM kernels bind: a planar weight chunk (planar.rs) read two ways,
// the input, a second input (x-mode variants), the output, and the uniform block.

struct Params {
    rows: u32,      // rows in this chunk
    units: u32,     // units per row
    a: u32,         // scale regions, in u32 words (planar.rs)
    b: u32,
    c: u32,
    x_stride: u32,  // vec4s per x row
    y_base: u32,    // first float of this matrix's output block
    y_stride: u32,  // floats per output row (the matrix's total rows)
    y_off: u32,     // first row of this chunk
    grid_x: u32,    // workgroups along x
    eps: f32,       // RMSNorm epsilon (x-mode norm)
    batch: u32,     // batch columns (the grid's z carries them here)
}

@group(0) @binding(0) var<storage, read> wq: array<vec4<u32>>; // payload, 1-2 per unit
@group(0) @binding(1) var<storage, read> ws: array<u32>;       // the same buffer, by word
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;  // (batch, cols / 4)
@group(0) @binding(3) var<storage, read> x2: array<vec4<f32>>; // x-mode norm: (cols / 4) norm weights; glu: (batch, cols / 4) up
@group(0) @binding(4) var<storage, read_write> y: array<f32>;  // y_base + (batch, y_stride)
@group(0) @binding(5) var<uniform> p: Params;
