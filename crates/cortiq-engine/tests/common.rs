//! Shared helpers for the end-to-end tests: where the real model and the references are.

use std::path::PathBuf;

/// The default model (SmolLM2-135M-Instruct Q4_1), fetched into the cache on first use
/// exactly as `cortiq pull` does (`CORTIQ_TEST_MODEL` may name a local copy). When it cannot
/// be had: a visible SKIP outside CI, a failure in CI (CI=true).
#[allow(dead_code)]
pub fn default_model() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CORTIQ_TEST_MODEL").map(PathBuf::from).filter(|p| p.exists()) {
        return Some(p);
    }
    model(cortiq_engine::hub::DEFAULT_MODEL)
}

/// A known model by name, fetched into the cache on first use (same SKIP/CI rules).
#[allow(dead_code)]
pub fn model(name: &str) -> Option<PathBuf> {
    // One test at a time fetches; the others then find the cached file.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    match cortiq_engine::hub::resolve(name) {
        Ok(p) => Some(p),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("model {name} could not be fetched in CI: {e:#}"),
        Err(e) => {
            eprintln!("SKIP real-model test: {name} unavailable ({e:#})");
            None
        }
    }
}

/// `shared/reference/` next to the repository checkout (`CORTIQ_REFERENCE_DIR` names another
/// copy, e.g. one carried to the GPU machine).
#[allow(dead_code)]
pub fn reference_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CORTIQ_REFERENCE_DIR").map(PathBuf::from).filter(|d| d.join("README.md").exists()) {
        return dir;
    }
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for up in here.ancestors() {
        let cand = up.join("shared/reference");
        if cand.join("README.md").exists() {
            return cand;
        }
        let sibling = up.join("../shared/reference");
        if sibling.join("README.md").exists() {
            return sibling;
        }
    }
    panic!("shared/reference not found above {}", here.display());
}

/// |a - b| / |a| (Euclidean norms).
#[allow(dead_code)]
pub fn rel_l2(a: &[f32], b: &[f32]) -> f32 {
    let num: f32 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    (num / a.iter().map(|x| x * x).sum::<f32>()).sqrt()
}

/// Where the greedy picks of two runs differ (`t` from logits `a`, `u` from `b`): the gap
/// between the two tokens in `a` and the runs' largest logit difference. The pick moved at
/// a near-tie when the gap is within that difference.
#[allow(dead_code)]
pub fn pick_gap(a: &[f32], b: &[f32], t: u32, u: u32) -> (f32, f32) {
    let noise = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
    (a[t as usize] - a[u as usize], noise)
}

/// A copy of the model file at `path` with the lowest mantissa bit of every
/// blk.0.attn_norm weight flipped, next to it: the smallest change a device's different
/// summation order could make, to measure how far the int8 path amplifies it.
#[allow(dead_code)]
pub fn ulp_moved(path: &std::path::Path) -> PathBuf {
    ulp_moved_in(path, 0)
}

/// The same with the norm of layer `layer` moved (`<stem>.ulp<layer>.gguf` next to `path`).
#[allow(dead_code)]
pub fn ulp_moved_in(path: &std::path::Path, layer: usize) -> PathBuf {
    let mut bytes = std::fs::read(path).unwrap();
    let parsed = cortiq_core::gguf::parse(&bytes).unwrap();
    let name = format!("blk.{layer}.attn_norm.weight");
    let norm = parsed.tensors.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no tensor {name}"));
    assert_eq!(norm.codec, cortiq_core::Codec::F32);
    // Little-endian f32: the lowest mantissa bit is in the first byte.
    let (o, n) = (norm.offset as usize, norm.nbytes as usize);
    (o..o + n).step_by(4).for_each(|i| bytes[i] ^= 1);
    let moved = path.with_extension(format!("ulp{layer}.gguf"));
    std::fs::write(&moved, &bytes).unwrap();
    moved
}
