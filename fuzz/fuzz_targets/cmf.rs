#![no_main]
//! CMF parser fuzz target: any bytes must give Ok or an error, never a panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(parsed) = cortiq_core::cmf::parse(data) {
        for t in &parsed.tensors {
            let _ = cortiq_core::cmf::checksum(&data[t.offset as usize..(t.offset + t.nbytes) as usize]);
        }
    }
});
