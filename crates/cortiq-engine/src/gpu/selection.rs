//! `CMF_GPU` (SPEC section 2): which backend the user asked for, and what this build can do.

/// What `CMF_GPU` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Unset or `0`: CPU only.
    CpuOnly,
    /// `1`: the platform's native choice (Metal on macOS, wgpu elsewhere).
    Native,
    /// `wgpu`: wgpu even on macOS (parity tests).
    Wgpu,
    /// `cuda`: the CUDA backend or the CPU, never another GPU backend.
    Cuda,
}

/// Parse a `CMF_GPU` value; an unknown value yields CPU only plus a notice to log.
pub fn parse_request(value: Option<&str>) -> (Request, Option<String>) {
    match value.map(str::trim) {
        None | Some("") | Some("0") => (Request::CpuOnly, None),
        Some("1") => (Request::Native, None),
        Some(v) if v.eq_ignore_ascii_case("wgpu") => (Request::Wgpu, None),
        Some(v) if v.eq_ignore_ascii_case("cuda") => (Request::Cuda, None),
        Some(v) => (Request::CpuOnly, Some(format!("CMF_GPU={v:?} is not one of 0, 1, wgpu, cuda; running on the CPU"))),
    }
}

/// Whether `setting` turns a default-on path off: 0, off, false or no.
#[cfg_attr(not(any(feature = "gpu", feature = "cuda")), allow(dead_code))]
pub(crate) fn off_setting(setting: Option<&str>) -> bool {
    matches!(setting.map(str::trim), Some("0" | "off" | "false" | "no"))
}

/// Whether environment variable `var` turns a default-on path off (`off_setting`): the
/// backends' switches such as `CMF_CUDA_CUBLAS=0`, `CMF_WGPU_PREFILL_INT8=0`.
#[cfg_attr(not(any(feature = "gpu", feature = "cuda")), allow(dead_code))]
pub(crate) fn switched_off(var: &str) -> bool {
    off_setting(std::env::var(var).ok().as_deref())
}

/// Backends compiled into this build, in the names `backend_name()` reports. GPU backends
/// join this list when their modules land (features `gpu`, `cuda`; Metal on macOS).
pub fn compiled_backends() -> Vec<&'static str> {
    let mut v = vec!["cpu"];
    if cfg!(feature = "gpu") {
        v.push("wgpu");
    }
    if cfg!(feature = "cuda") {
        v.push("cuda");
    }
    v
}

/// The backend a request resolves to in this build, and a notice when the request names a
/// backend that is not compiled in (logged once by the facade).
pub fn resolve(req: Request, compiled: &[&'static str]) -> (&'static str, Option<String>) {
    let want = match req {
        Request::CpuOnly => return ("cpu", None),
        Request::Native if cfg!(target_os = "macos") => "metal",
        Request::Native | Request::Wgpu => "wgpu",
        Request::Cuda => "cuda",
    };
    match compiled.iter().find(|&&c| c == want) {
        Some(&c) => (c, None),
        None => ("cpu", Some(format!("CMF_GPU asks for {want}, which this build does not include (built with: {}); running on the CPU", compiled.join(", ")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_off_turns_a_default_path_off() {
        for off in ["0", "off", "false", " no "] {
            assert!(off_setting(Some(off)), "{off}");
        }
        for on in [None, Some("1"), Some(""), Some("on")] {
            assert!(!off_setting(on), "{on:?}");
        }
    }

    #[test]
    fn cmf_gpu_values_select_as_the_spec_says() {
        assert_eq!(parse_request(None).0, Request::CpuOnly);
        assert_eq!(parse_request(Some("0")).0, Request::CpuOnly);
        assert_eq!(parse_request(Some("1")).0, Request::Native);
        assert_eq!(parse_request(Some("WGPU")).0, Request::Wgpu);
        assert_eq!(parse_request(Some("cuda")).0, Request::Cuda);
        let (r, note) = parse_request(Some("vulkan!"));
        assert_eq!(r, Request::CpuOnly);
        assert!(note.unwrap().contains("vulkan!"));
    }

    #[test]
    fn a_missing_backend_falls_back_to_cpu_with_a_notice_never_to_another_gpu() {
        let only_wgpu = ["cpu", "wgpu"];
        assert_eq!(resolve(Request::Cuda, &only_wgpu).0, "cpu", "cuda never silently becomes wgpu");
        assert!(resolve(Request::Cuda, &only_wgpu).1.is_some());
        assert_eq!(resolve(Request::Wgpu, &only_wgpu), ("wgpu", None));
        assert_eq!(resolve(Request::CpuOnly, &only_wgpu), ("cpu", None));
        assert_eq!(resolve(Request::Wgpu, &["cpu"]).0, "cpu");
    }
}
