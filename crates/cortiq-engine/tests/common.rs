//! Shared helpers for the end-to-end tests: where the real model and the references are.

use std::path::PathBuf;

/// The default model (SmolLM2-135M-Instruct Q4_1), as `cortiq pull` caches it. `None` with a
/// visible SKIP line outside CI; in CI (CI=true) a missing model is a failure, because
/// `.ci/run` pulls it before the tests.
pub fn default_model() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("CORTIQ_TEST_MODEL").map(PathBuf::from),
        std::env::var_os("CORTIQ_HOME").map(|h| PathBuf::from(h).join("SmolLM2-135M-Instruct.Q4_1.gguf")),
        std::env::var_os("XDG_CACHE_HOME").map(|h| PathBuf::from(h).join("cortiq/SmolLM2-135M-Instruct.Q4_1.gguf")),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cortiq/SmolLM2-135M-Instruct.Q4_1.gguf")),
    ];
    let found = candidates.into_iter().flatten().find(|p| p.exists());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("the default model is missing in CI: .ci/run must run `cortiq pull` first");
        }
        eprintln!("SKIP real-model test: SmolLM2-135M-Instruct.Q4_1.gguf not found (run `cortiq pull`)");
    }
    found
}

/// `shared/reference/` next to the repository checkout.
pub fn reference_dir() -> PathBuf {
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
