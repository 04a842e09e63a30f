//! Multithreaded matvec / GEMM over packed weights: y (batch, rows) = x (batch, cols) . W^T.
//! Rows are split over the worker pool; within a row chunk every activation row is visited
//! while the chunk's weights sit in L1.

use super::dot::{dot_f32, dot_slices, q8_kernel};
use super::quant::{quantize_rows, BlockQ8, QK};
use cortiq_core::Codec;
use super::pool::{parallel_for, pool};

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

/// Smallest rows per parallel task: a task must be worth a scheduling step (a 576-wide
/// Q4 row is ~360 bytes; 16 rows is ~6 KB of weights).
const MIN_ROWS_PER_TASK: usize = 16;

/// Output pointer shared by tasks that write disjoint elements.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: tasks write disjoint (batch, row) elements and the slices outlive the scope.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// Weight rows r0..r1 of `w` against activation rows b0.. in groups of N through `kernel`
/// (each group's blocks once per weight row) while whole groups remain; results into `out`
/// (batch, w.rows). Returns the first activation row left over.
fn row_groups<'a, const N: usize>(w: &WeightView, out: OutPtr, (r0, r1): (usize, usize), (b0, batch): (usize, usize), xb: &impl Fn(usize) -> &'a [BlockQ8], kernel: fn(&[u8], [&[BlockQ8]; N]) -> [f32; N]) -> usize {
    let mut b = b0;
    while b + N <= batch {
        for r in r0..r1 {
            let y = kernel(w.row(r), std::array::from_fn(|t| xb(b + t)));
            for (t, v) in y.into_iter().enumerate() {
                // SAFETY: (b + t, r) is written by exactly the task that owns rows r0..r1.
                unsafe { *out.0.add((b + t) * w.rows + r) = v };
            }
        }
        b += N;
    }
    b
}

/// y (batch, w.rows) = x (batch, w.cols) . W^T.
pub fn matmul(w: &WeightView, x: &[f32], batch: usize, y: &mut [f32]) {
    matmul_many(&mut [(*w, y)], x, batch);
}

/// Several matrices applied to the same input in one parallel region (QKV, gate+up):
/// the input is quantized once and all rows of all matrices share one task pool.
/// Each pair is (W, y (batch, W.rows)); x is (batch, cols), every W has `cols` columns.
pub fn matmul_many(jobs: &mut [(WeightView, &mut [f32])], x: &[f32], batch: usize) {
    let Some(cols) = jobs.first().map(|(w, _)| w.cols) else { return };
    assert_eq!(x.len(), batch * cols, "matmul: activation shape");
    for (w, y) in jobs.iter() {
        assert_eq!(w.cols, cols, "matmul_many: all matrices share the input width");
        assert_eq!(y.len(), batch * w.rows, "matmul: output shape");
    }
    let outs: Vec<(WeightView, OutPtr)> = jobs.iter_mut().map(|(w, y)| (*w, OutPtr(y.as_mut_ptr()))).collect();
    // Rows per task: about four tasks per thread over all matrices, so threads balance.
    let total_rows: usize = outs.iter().map(|(w, _)| w.rows).sum();
    let per_task = (total_rows / (4 * pool().threads())).max(MIN_ROWS_PER_TASK);
    let tasks: Vec<(usize, usize, usize)> = outs
        .iter()
        .enumerate()
        .flat_map(|(j, (w, _))| (0..w.rows).step_by(per_task).map(move |r0| (j, r0, (r0 + per_task).min(w.rows))))
        .collect();
    // Each matrix with int8 kernels dots the activations quantized once (as ggml picks an
    // activation type per weight type); the others decode their rows to f32.
    let any_q8 = cols % QK == 0 && outs.iter().any(|(w, _)| q8_kernel(w.codec).is_some());
    let xq = if any_q8 { quantize_rows(x, cols) } else { Vec::new() };
    let nb = cols / QK;
    parallel_for(tasks.len(), |t| {
        let (j, r0, r1) = tasks[t];
        let (w, out) = outs[j];
        let rows = w.rows;
        match q8_kernel(w.codec).filter(|_| any_q8) {
            Some(k) => {
                let xb = |b: usize| &xq[b * nb..(b + 1) * nb];
                // Groups of eight activation rows, then of four, then one at a time.
                let b = k.eight.map_or(0, |eight| row_groups(&w, out, (r0, r1), (0, batch), &xb, eight));
                let b = row_groups(&w, out, (r0, r1), (b, batch), &xb, k.four);
                let rb = w.row_bytes();
                for b in b..batch {
                    // SAFETY: (b, r0..r1) of matrix j is written by exactly this task.
                    let y = unsafe { std::slice::from_raw_parts_mut(out.0.add(b * rows + r0), r1 - r0) };
                    (k.rows)(&w.bytes[r0 * rb..r1 * rb], rb, xb(b), y);
                }
            }
            None if batch == 1 => {
                for r in r0..r1 {
                    // SAFETY: as above.
                    unsafe { *out.0.add(r) = dot_f32(w.codec, w.row(r), x) };
                }
            }
            None => {
                // Decode each row once and reuse it for every activation row.
                let mut dec = vec![0f32; cols];
                for r in r0..r1 {
                    w.decode_row(r, &mut dec);
                    for b in 0..batch {
                        let xb = &x[b * cols..(b + 1) * cols];
                        // SAFETY: as above.
                        unsafe { *out.0.add(b * rows + r) = dot_slices(&dec, xb) };
                    }
                }
            }
        }
    });
}

/// The dense gated FFN on the CPU: out (batch, down.rows) = down(act(gate(x)) * up(x)).
pub fn ffn_gated(gate: &WeightView, up: &WeightView, down: &WeightView, act: crate::gpu::backend::Activation, x: &[f32], batch: usize, out: &mut [f32]) {
    let ff = gate.rows;
    let mut g = vec![0f32; batch * ff]; // (batch, n_ff)
    let mut u = vec![0f32; batch * ff];
    matmul_many(&mut [(*gate, &mut g[..]), (*up, &mut u[..])], x, batch);
    super::ops::gated(act, &mut g, &u);
    matmul(down, &g, batch, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use cortiq_core::rng::SplitMix64;

    /// A random (rows, cols) matrix packed in `codec`.
    fn packed_random(rng: &mut SplitMix64, codec: Codec, rows: usize, cols: usize) -> Vec<u8> {
        rng.normals(rows * cols, 0.05).chunks(cols).flat_map(|r| codec.pack_row(r).unwrap()).collect()
    }

    #[test]
    fn a_batch_gives_each_row_what_it_gives_alone() {
        // The eight-, four- and one-row kernels do the same operations per activation row,
        // so a prompt's rows are bit-identical to decoding them one at a time (13 = 8 + 4 + 1).
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for codec in [Codec::Q4_0, Codec::Q4_1, Codec::Q5_0, Codec::Q5_1, Codec::Q8_0, Codec::Q4K, Codec::Q5K, Codec::Q6K, Codec::Q2K, Codec::Q3K, Codec::IQ4NL, Codec::IQ4XS] {
            let (rows, cols, batch) = (21usize, 512usize, 13usize);
            let bytes = packed_random(&mut rng, codec, rows, cols);
            let w = WeightView { codec, rows, cols, bytes: &bytes };
            let x = rng.normals(batch * cols, 1.0);
            let mut y = vec![f32::NAN; batch * rows];
            matmul(&w, &x, batch, &mut y);
            for b in 0..batch {
                let mut alone = vec![f32::NAN; rows];
                matmul(&w, &x[b * cols..(b + 1) * cols], 1, &mut alone);
                let got: Vec<u32> = y[b * rows..(b + 1) * rows].iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, alone.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), "{codec} row {b} (seed {seed})");
            }
        }
    }

    /// Against the codec's f64 reference dot. The int8 activation rounding adds an error of
    /// about |w| |x| / 127 / sqrt(3) / sqrt(cols) per output (std); the bound is 5e-3 |w| |x|,
    /// many standard deviations above that and far below a wrong row or block (~|w| |x|).
    #[test]
    fn matmul_matches_reference_dots_for_odd_shapes() {
        let mut rng = SplitMix64::fresh();
        let seed = rng.seed();
        for codec in [Codec::Q4_1, Codec::Q8_0, Codec::F16, Codec::Q6K, Codec::Q5K, Codec::Q4_0, Codec::Q2K, Codec::Q3K, Codec::IQ4NL, Codec::IQ4XS] {
            for (rows, cols, batch) in [(1usize, 256usize, 1usize), (37, 512, 3), (17, 768, 1), (19, 256, 13)] {
                let bytes = packed_random(&mut rng, codec, rows, cols);
                let w = WeightView { codec, rows, cols, bytes: &bytes };
                let x = rng.normals(batch * cols, 1.0);
                let mut y = vec![f32::NAN; batch * rows];
                matmul(&w, &x, batch, &mut y);
                let mut dec = vec![0f32; cols];
                for b in 0..batch {
                    let xb = &x[b * cols..(b + 1) * cols];
                    let xn = xb.iter().map(|v| v * v).sum::<f32>().sqrt();
                    for r in 0..rows {
                        let want = codec.dot_row(w.row(r), xb).unwrap();
                        w.decode_row(r, &mut dec);
                        let wn = dec.iter().map(|v| v * v).sum::<f32>().sqrt();
                        let got = y[b * rows + r];
                        assert!((got - want).abs() <= 5e-3 * wn * xn, "{codec} {rows}x{cols} b{b} r{r}: {got} vs {want} (seed {seed})");
                    }
                }
            }
        }
    }
}
