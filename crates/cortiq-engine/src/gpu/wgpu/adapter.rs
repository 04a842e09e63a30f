//! Which adapter the wgpu backend opens (`CMF_GPU_ADAPTER`) and how much of its memory the
//! weights may take (`CMF_GPU_BUDGET`). Pure logic over adapter descriptions, tested on CI.

/// What selection needs to know about one adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterDesc {
    pub name: String,
    pub kind: AdapterKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterKind {
    Discrete,
    Integrated,
    Virtual,
    /// A software rasterizer (llvmpipe, WARP): slower than cortiq's own CPU path.
    Cpu,
    Other,
}

/// The adapter to open: `pin` (`CMF_GPU_ADAPTER`: an index into `adapters`, or a
/// case-insensitive part of its name) or else the first discrete, then integrated, then
/// virtual adapter. A software adapter is only taken when pinned.
pub fn choose(adapters: &[AdapterDesc], pin: Option<&str>) -> Result<usize, String> {
    if let Some(pin) = pin.map(str::trim).filter(|p| !p.is_empty()) {
        if let Ok(i) = pin.parse::<usize>() {
            return if i < adapters.len() { Ok(i) } else { Err(format!("CMF_GPU_ADAPTER={pin}: there are {} adapters (0..{})", adapters.len(), adapters.len().saturating_sub(1))) };
        }
        let want = pin.to_lowercase();
        return adapters.iter().position(|a| a.name.to_lowercase().contains(&want)).ok_or_else(|| format!("CMF_GPU_ADAPTER={pin:?} matches none of: {}", names(adapters)));
    }
    for kind in [AdapterKind::Discrete, AdapterKind::Integrated, AdapterKind::Virtual, AdapterKind::Other] {
        if let Some(i) = adapters.iter().position(|a| a.kind == kind) {
            return Ok(i);
        }
    }
    if adapters.is_empty() {
        Err("no GPU adapter".into())
    } else {
        Err(format!("only software adapters ({}); pin one with CMF_GPU_ADAPTER to use it anyway", names(adapters)))
    }
}

fn names(adapters: &[AdapterDesc]) -> String {
    adapters.iter().enumerate().map(|(i, a)| format!("{i}: {}", a.name)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(name: &str, kind: AdapterKind) -> AdapterDesc {
        AdapterDesc { name: name.into(), kind }
    }

    #[test]
    fn the_discrete_card_wins_and_a_pin_overrides_by_index_or_name() {
        let list = [a("llvmpipe (LLVM 15)", AdapterKind::Cpu), a("Intel UHD 770", AdapterKind::Integrated), a("NVIDIA H200", AdapterKind::Discrete)];
        assert_eq!(choose(&list, None), Ok(2));
        assert_eq!(choose(&list[..2], None), Ok(1));
        assert_eq!(choose(&list, Some("1")), Ok(1));
        assert_eq!(choose(&list, Some("llvm")), Ok(0), "a pinned software adapter is allowed");
        assert_eq!(choose(&list, Some("h200")), Ok(2));
        assert!(choose(&list, Some("7")).unwrap_err().contains("3 adapters"));
        assert!(choose(&list, Some("radeon")).unwrap_err().contains("NVIDIA H200"));
    }

    #[test]
    fn software_adapters_and_no_adapters_are_refused_with_a_reason() {
        assert_eq!(choose(&[], None).unwrap_err(), "no GPU adapter");
        assert!(choose(&[a("llvmpipe", AdapterKind::Cpu)], None).unwrap_err().contains("CMF_GPU_ADAPTER"));
    }
}
