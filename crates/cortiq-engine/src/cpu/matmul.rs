//! Multithreaded matvec / GEMM over packed weights: y (batch, rows) = x (batch, cols) . W^T.
//! Rows are split over the worker pool; within a row chunk every activation row is visited
//! while the chunk's weights sit in L1.

use super::dot::{dot_f32, q8_kernel};
use super::quant::{quantize_rows, QK};
use cortiq_core::Codec;
use rayon::prelude::*;

/// A weight matrix: `rows` rows of `cols` values in `codec`, packed back to back.
#[derive(Debug, Clone, Copy)]
pub struct WeightView<'a> {
    pub codec: Codec,
    pub rows: usize,
    pub cols: usize,
    pub bytes: &'a [u8],
}

impl<'a> WeightView<'a> {
    pub fn row_bytes(&self) -> usize {
        self.bytes.len() / self.rows.max(1)
    }

    pub fn row(&self, r: usize) -> &'a [u8] {
        let rb = self.row_bytes();
        &self.bytes[r * rb..(r + 1) * rb]
    }

    /// Decode row `r` into `out` (`cols` values).
    pub fn decode_row(&self, r: usize, out: &mut [f32]) {
        self.codec.unpack_row(self.row(r), out).expect("tensor sizes are validated when the model loads");
    }
}

/// Rows per parallel task: small enough to balance two to many cores, large enough that a
/// task is worth a scheduling step (a 576-wide Q4 row is ~360 bytes).
const ROWS_PER_TASK: usize = 16;

/// Output pointer shared by tasks that write disjoint elements.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: tasks write disjoint (batch, row) elements and the slice outlives the scope.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// y (batch, w.rows) = x (batch, w.cols) . W^T.
pub fn matmul(w: &WeightView, x: &[f32], batch: usize, y: &mut [f32]) {
    assert_eq!(x.len(), batch * w.cols, "matmul: activation shape");
    assert_eq!(y.len(), batch * w.rows, "matmul: output shape");
    let out = OutPtr(y.as_mut_ptr());
    let rows = w.rows;
    let tasks = rows.div_ceil(ROWS_PER_TASK);
    match q8_kernel(w.codec).filter(|_| w.cols % QK == 0) {
        Some(kernel) => {
            let xq = quantize_rows(x, w.cols);
            let nb = w.cols / QK;
            (0..tasks).into_par_iter().for_each(|t| {
                let out = out;
                let r0 = t * ROWS_PER_TASK;
                let r1 = (r0 + ROWS_PER_TASK).min(rows);
                for b in 0..batch {
                    let xb = &xq[b * nb..(b + 1) * nb];
                    for r in r0..r1 {
                        // SAFETY: (b, r) is written by exactly this task.
                        unsafe { *out.0.add(b * rows + r) = kernel(w.row(r), xb) };
                    }
                }
            });
        }
        None => {
            (0..tasks).into_par_iter().for_each(|t| {
                let out = out;
                let r0 = t * ROWS_PER_TASK;
                let r1 = (r0 + ROWS_PER_TASK).min(rows);
                for b in 0..batch {
                    let xb = &x[b * w.cols..(b + 1) * w.cols];
                    for r in r0..r1 {
                        // SAFETY: (b, r) is written by exactly this task.
                        unsafe { *out.0.add(b * rows + r) = dot_f32(w.codec, w.row(r), xb) };
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    #[test]
    fn matmul_matches_reference_dots_for_odd_shapes() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for codec in [Codec::Q4_1, Codec::Q8_0, Codec::F16, Codec::Q6K, Codec::Q4_0] {
            for (rows, cols, batch) in [(1usize, 256usize, 1usize), (37, 512, 3), (17, 768, 1)] {
                let wf = rng.normals(rows * cols, 0.05);
                let bytes: Vec<u8> = wf.chunks(cols).flat_map(|r| codec.pack_row(r).unwrap()).collect();
                let w = WeightView { codec, rows, cols, bytes: &bytes };
                let x = rng.normals(batch * cols, 1.0);
                let mut y = vec![f32::NAN; batch * rows];
                matmul(&w, &x, batch, &mut y);
                for b in 0..batch {
                    for r in 0..rows {
                        let want = codec.dot_row(w.row(r), &x[b * cols..(b + 1) * cols]).unwrap();
                        let got = y[b * rows + r];
                        assert!((got - want).abs() <= 0.02 * (cols as f32).sqrt() * 0.05 + 1e-3, "{codec} {rows}x{cols} b{b} r{r}: {got} vs {want} (seed {seed})");
                    }
                }
            }
        }
    }
}
