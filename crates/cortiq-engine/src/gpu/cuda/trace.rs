//! The decode kernels' block timeline (profiling): with `CMF_CUDA_DEFINES=CORTIQ_TRACE` every
//! block of the traced kernels (matvec.cu's `BlockTrace`) appends a record to a ring in the
//! module, and after each graph run the backend appends the new records to the file
//! `CMF_CUDA_TRACE` names (default `cortiq-trace.bin`): per record four little-endian u64,
//! (kernel family << 48 | SM << 32 | linear block index, globaltimer ns at the block's entry,
//! when its wait for the kernel before returned or 0, when its last thread left), in the
//! order the blocks finished. `bench/timeline.py` turns them into per-kernel times.

use cudarc::driver::{CudaModule, CudaStream};
use std::io::Write;
use std::sync::Arc;

/// Records the kernels' ring holds (`TRACE_RING` in matvec.cu, defined from this).
pub(super) const RING: u64 = 1 << 20;
/// Bytes of one record (a ulonglong4).
const RECORD: usize = 32;

/// The ring's reader: how far it has drained, and where to.
pub(super) struct Trace {
    module: Arc<CudaModule>,
    drained: u64,
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl Trace {
    /// The reader of `module`'s ring, writing to `CMF_CUDA_TRACE` (created anew).
    pub(super) fn open(module: Arc<CudaModule>) -> Result<Trace, String> {
        let path = std::path::PathBuf::from(std::env::var("CMF_CUDA_TRACE").unwrap_or_else(|_| "cortiq-trace.bin".into()));
        let file = std::fs::File::create(&path).map_err(|e| format!("CMF_CUDA_TRACE: cannot create {}: {e}", path.display()))?;
        eprintln!("cortiq: CUDA: block timeline to {}", path.display());
        Ok(Trace { module, drained: 0, file, path })
    }

    /// Append the records written since the last drain (waits for the stream's work); records
    /// overwritten in the ring meanwhile are lost, and said so.
    pub(super) fn drain(&mut self, stream: &Arc<CudaStream>) -> Result<(), String> {
        let err = |e: cudarc::driver::DriverError| format!("block timeline: {e}");
        let mut count = [0u8; 8];
        stream.memcpy_dtoh(&self.module.get_global("cortiq_trace_count", stream).map_err(err)?, &mut count).map_err(err)?;
        let count = u64::from_le_bytes(count);
        let (lost, pieces) = unread(self.drained, count, RING);
        if lost > 0 {
            eprintln!("cortiq: CUDA: block timeline lost {lost} records (more than the ring between two drains)");
        }
        let ring = self.module.get_global("cortiq_trace_ring", stream).map_err(err)?;
        let mut bytes = Vec::new();
        for (slot, n) in pieces {
            let piece = ring.slice((slot as usize * RECORD)..((slot + n) as usize * RECORD));
            bytes.extend(stream.clone_dtoh(&piece).map_err(err)?);
        }
        self.drained = count;
        self.file.write_all(&bytes).map_err(|e| format!("CMF_CUDA_TRACE: cannot write {}: {e}", self.path.display()))
    }
}

/// The records a drain reads when `drained` of `count` written were read before, from a ring
/// of `ring` slots: how many were overwritten unread, and the rest as (first slot, records)
/// pieces in write order (two where they wrap past the ring's end).
fn unread(drained: u64, count: u64, ring: u64) -> (u64, Vec<(u64, u64)>) {
    let from = drained.max(count.saturating_sub(ring));
    let mut pieces = Vec::new();
    let mut at = from;
    while at < count {
        let slot = at % ring;
        let n = (count - at).min(ring - slot);
        pieces.push((slot, n));
        at += n;
    }
    (from - drained, pieces)
}

#[cfg(test)]
mod tests {
    use super::unread;

    #[test]
    fn a_drain_reads_the_new_records_in_write_order_and_counts_the_overwritten() {
        assert_eq!(unread(0, 0, 8), (0, vec![]));
        assert_eq!(unread(0, 5, 8), (0, vec![(0, 5)]));
        assert_eq!(unread(5, 11, 8), (0, vec![(5, 3), (0, 3)]));
        assert_eq!(unread(11, 11, 8), (0, vec![]));
        // 20 written since the last drain at 3: the 12 oldest were overwritten.
        assert_eq!(unread(3, 23, 8), (12, vec![(7, 1), (0, 7)]));
        assert_eq!(unread(16, 24, 8), (0, vec![(0, 8)]));
    }
}
