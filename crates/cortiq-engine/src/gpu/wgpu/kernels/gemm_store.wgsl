// The GEMM tiles' stores (gemm.wgsl, gemm_q8.wgsl; appended by the host): an invocation's
// sums of rows r, r + 16, r + 32, r + 48 (acc0..acc3) for batch columns b, b + 16, b + 32,
// b + 48, those inside the matrix, into y (batch, y_stride) from y_base + y_off.

fn store_tile(r: u32, b: u32, acc0: vec4<f32>, acc1: vec4<f32>, acc2: vec4<f32>, acc3: vec4<f32>) {
    let base = p.y_base + p.y_off;
    store_row(base, r, b, acc0);
    store_row(base, r + 16u, b, acc1);
    store_row(base, r + 32u, b, acc2);
    store_row(base, r + 48u, b, acc3);
}

// Row r's sums for batch columns b, b + 16, b + 32, b + 48.
fn store_row(base: u32, r: u32, b: u32, v: vec4<f32>) {
    if (r >= p.rows) {
        return;
    }
    for (var j = 0u; j < 4u; j++) {
        let bj = b + 16u * j;
        if (bj < p.batch) {
            y[base + bj * p.y_stride + r] = v[j];
        }
    }
}
