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

/// Fraction of device-local memory weights may occupy by default (the rest: activations,
/// KV mirrors, the driver).
pub const DEFAULT_BUDGET_FRACTION: f64 = 0.8;

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

/// The weight budget in bytes: `CMF_GPU_BUDGET` as bytes with an optional K/M/G/T suffix
/// (powers of 1024) or as a fraction of device memory (`0.5`); otherwise
/// `DEFAULT_BUDGET_FRACTION` of `memory` (None when the device did not say).
pub fn budget(setting: Option<&str>, memory: Option<u64>) -> Result<Option<u64>, String> {
    let Some(s) = setting.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(memory.map(|m| (m as f64 * DEFAULT_BUDGET_FRACTION) as u64));
    };
    let bad = || format!("CMF_GPU_BUDGET={s:?} is neither a size (8G, 512M, 1000000) nor a fraction (0.5)");
    if s.contains('.') && !s.ends_with(|c: char| c.is_ascii_alphabetic()) {
        let f: f64 = s.parse().map_err(|_| bad())?;
        if !(f > 0.0 && f <= 1.0) {
            return Err(bad());
        }
        return memory.map(|m| Some((m as f64 * f) as u64)).ok_or_else(|| format!("CMF_GPU_BUDGET={s}: a fraction needs the device memory size, which this adapter does not report; give bytes"));
    }
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        Some('T') => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(n.is_finite() && n > 0.0) {
        return Err(bad());
    }
    Ok(Some((n * mult as f64) as u64))
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

    #[test]
    fn budget_takes_sizes_fractions_and_defaults_to_a_fraction_of_memory() {
        let gib = 1u64 << 30;
        assert_eq!(budget(None, Some(10 * gib)), Ok(Some(8 * gib)));
        assert_eq!(budget(None, None), Ok(None));
        assert_eq!(budget(Some("8G"), None), Ok(Some(8 * gib)));
        assert_eq!(budget(Some("512m"), None), Ok(Some(512 << 20)));
        assert_eq!(budget(Some("1.5G"), None), Ok(Some(3 * gib / 2)));
        assert_eq!(budget(Some("123456"), None), Ok(Some(123456)));
        assert_eq!(budget(Some("0.5"), Some(10 * gib)), Ok(Some(5 * gib)));
        assert!(budget(Some("0.5"), None).is_err());
        for bad in ["lots", "-1G", "1.5", "0", "G"] {
            assert!(budget(Some(bad), Some(gib)).is_err(), "{bad}");
        }
    }
}
