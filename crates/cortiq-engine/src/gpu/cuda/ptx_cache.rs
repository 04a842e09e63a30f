//! The kernel module's PTX kept on disk (`<cache>/cuda-kernels/`), keyed by the kernel
//! source, the target architecture, the NVRTC version and cortiq's, so a second process
//! skips NVRTC (the driver keeps its own cache of the PTX -> machine code step). A file that
//! cannot be read or written only costs the compile; a file whose key matches but which the
//! driver rejects is recompiled and overwritten; each write prunes the directory to the
//! newest `KEEP_FILES` files.

use cudarc::nvrtc::{CompileOptions, Ptx};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where this process's kernels came from, for `cortiq gpu`.
#[derive(Clone, Debug)]
pub(super) enum KernelCacheState {
    /// Read from the file (bytes); NVRTC did not run.
    Loaded(PathBuf, usize),
    /// Compiled by NVRTC (milliseconds) and written to the file (bytes).
    Written(PathBuf, u128, usize),
    /// Compiled (milliseconds), but the file could not be written (the reason).
    NotWritten(PathBuf, u128, String),
}

impl std::fmt::Display for KernelCacheState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelCacheState::Loaded(p, n) => write!(f, "loaded {n} bytes of PTX from {}", p.display()),
            KernelCacheState::Written(p, ms, n) => write!(f, "compiled by NVRTC in {ms} ms; {n} bytes of PTX written to {}", p.display()),
            KernelCacheState::NotWritten(p, ms, e) => write!(f, "compiled by NVRTC in {ms} ms; could not write {} ({e})", p.display()),
        }
    }
}

/// The cache file for `src` compiled for `arch` (an NVRTC `--gpu-architecture` value) by
/// NVRTC `nvrtc` (major, minor), under `dir`.
pub(super) fn cache_path(dir: &Path, src: &str, arch: &str, nvrtc: (i32, i32)) -> PathBuf {
    let mut h = Sha256::new();
    for part in [src, arch, &format!("nvrtc {}.{}", nvrtc.0, nvrtc.1), env!("CARGO_PKG_VERSION")] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    let key: String = h.finalize()[..12].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{key}.ptx"))
}

/// The PTX held in `path`, if the file is there and reads as text.
pub(super) fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().filter(|s| !s.is_empty())
}

/// Compile `src` for `arch` with NVRTC and write the PTX to `path` (temp file, then rename,
/// so a concurrent reader never sees half a file).
pub(super) fn compile_and_store(src: &str, arch: &str, path: PathBuf) -> Result<(Ptx, KernelCacheState), String> {
    let start = Instant::now();
    let opts = CompileOptions { options: vec![format!("--gpu-architecture={arch}")], ..Default::default() };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| format!("NVRTC: {e:?}"))?;
    let ms = start.elapsed().as_millis();
    let text = ptx.to_src();
    let write = || -> std::io::Result<()> {
        let dir = path.parent().expect("cache path has a parent");
        std::fs::create_dir_all(dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text.as_bytes())?;
        std::fs::rename(&tmp, &path)
    };
    let state = match write() {
        Ok(()) => {
            prune(path.parent().expect("cache path has a parent"), KEEP_FILES);
            KernelCacheState::Written(path, ms, text.len())
        }
        Err(e) => KernelCacheState::NotWritten(path, ms, e.to_string()),
    };
    Ok((Ptx::from_src(text), state))
}

/// PTX files the cache keeps (one per kernel source and architecture in use: a few builds'
/// worth on a machine with two kinds of card).
const KEEP_FILES: usize = 8;

/// Remove all but the `keep` most recently written PTX files in `dir`, and temp files a
/// crashed writer left there over an hour ago. Best effort: errors are ignored.
fn prune(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut ptx = Vec::new();
    for e in entries.flatten() {
        let (path, Ok(meta)) = (e.path(), e.metadata()) else { continue };
        let modified = meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH);
        match path.extension().and_then(|x| x.to_str()) {
            Some("ptx") => ptx.push((modified, path)),
            Some(x) if x.starts_with("tmp") && modified.elapsed().is_ok_and(|age| age.as_secs() > 3600) => {
                let _ = std::fs::remove_file(&path);
            }
            _ => {}
        }
    }
    ptx.sort_by_key(|e| std::cmp::Reverse(e.0));
    for (_, path) in ptx.into_iter().skip(keep) {
        let _ = std::fs::remove_file(path);
    }
}

/// The NVRTC library's version, (0, 0) where it does not say.
pub(super) fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: nvrtcVersion writes two ints through the pointers given; the caller
    // (`CudaBackend::new`) checked that the library loads before any NVRTC call.
    let ok = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if ok == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        (major, minor)
    } else {
        (0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::{cache_path, compile_and_store, prune, read, KernelCacheState};
    use std::path::Path;

    /// Pruning keeps the newest PTX files and leaves other files alone.
    #[test]
    fn pruning_keeps_the_newest_ptx_files() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(1000);
        for i in 0..5u64 {
            let f = std::fs::File::create(dir.path().join(format!("{i}.ptx"))).unwrap();
            f.set_modified(t0 + std::time::Duration::from_secs(10 * i)).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let fresh_tmp = dir.path().join("9.tmp123");
        std::fs::write(&fresh_tmp, b"x").unwrap();
        prune(dir.path(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["3.ptx", "4.ptx", "9.tmp123", "notes.txt"]);
    }

    /// A compile writes the PTX where the key says and a later read returns exactly it; an
    /// unwritable directory costs only the file. Needs libnvrtc, no GPU (`.ci/run` installs it).
    #[test]
    fn compiled_ptx_is_stored_and_read_back() {
        // SAFETY: only tries to dlopen the library and reports whether that worked.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            eprintln!("SKIP compiled_ptx_is_stored_and_read_back: libnvrtc not found (LD_LIBRARY_PATH; .ci/run installs it)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.f; }";
        let path = cache_path(&dir.path().join("cuda-kernels"), src, "compute_80", (13, 0));
        let (ptx, state) = compile_and_store(src, "compute_80", path.clone()).unwrap();
        assert!(matches!(state, KernelCacheState::Written(ref p, _, n) if *p == path && n == ptx.to_src().len()), "{state}");
        assert_eq!(read(&path).as_deref(), Some(ptx.to_src().as_str()));
        assert!(ptx.to_src().contains("twice"));
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, b"not a directory").unwrap();
        let (_, state) = compile_and_store(src, "compute_80", blocked.join("k.ptx")).unwrap();
        assert!(matches!(state, KernelCacheState::NotWritten(..)), "{state}");
        assert!(compile_and_store("this is not CUDA", "compute_80", dir.path().join("bad.ptx")).is_err());
    }

    /// The key changes with each of its parts and stays put otherwise.
    #[test]
    fn the_cache_key_follows_source_architecture_and_nvrtc() {
        let dir = Path::new("/c");
        let base = cache_path(dir, "kernel", "compute_90", (13, 0));
        assert_eq!(base, cache_path(dir, "kernel", "compute_90", (13, 0)));
        assert_eq!(base.parent(), Some(dir));
        for other in [cache_path(dir, "kernel ", "compute_90", (13, 0)), cache_path(dir, "kernel", "compute_80", (13, 0)), cache_path(dir, "kernel", "compute_90", (13, 1))] {
            assert_ne!(base, other);
        }
        // Length-prefixed parts: moving text between source and architecture is a new key.
        assert_ne!(cache_path(dir, "ab", "c", (1, 0)), cache_path(dir, "a", "bc", (1, 0)));
    }
}
