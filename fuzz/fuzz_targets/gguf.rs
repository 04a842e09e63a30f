#![no_main]
//! GGUF parser fuzz target: any bytes must give Ok or an error, never a panic, a hang or
//! an allocation sized by unvalidated input. Accepted files are decoded row by row.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(parsed) = cortiq_core::gguf::parse(data) {
        for t in parsed.tensors.iter().take(4) {
            let bytes = &data[t.offset as usize..(t.offset + t.nbytes) as usize];
            let cols = t.cols() as usize;
            if cols > 0 && cols <= 1 << 16 {
                let rb = t.codec.row_bytes(cols as u64).unwrap() as usize;
                let mut row = vec![0f32; cols];
                for chunk in bytes.chunks_exact(rb).take(4) {
                    t.codec.unpack_row(chunk, &mut row).unwrap();
                }
            }
        }
    }
});
