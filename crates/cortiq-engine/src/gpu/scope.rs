//! Per-thread gates (SPEC section 5): CPU scopes, GPU scopes inside them, the current layer,
//! the device pin, and the process-wide pause. Every op gate asks `enabled_here()` through
//! the facade. Each piece of state has a guard that restores it on drop, panics included.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The per-thread gate state; copied into pool workers so their work inherits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScopeState {
    /// Nesting depth of `cpu_scope`.
    pub cpu_depth: u32,
    /// Nesting depth of `gpu_scope` inside a held CPU scope.
    pub gpu_depth: u32,
    /// The layer the pipeline is in (`None`: embedding, head, or outside the stack).
    pub layer: Option<u32>,
    /// A device pinned by `with_device`.
    pub device: Option<usize>,
}

impl ScopeState {
    /// True when a CPU scope holds and no GPU scope re-opened the gate.
    pub fn cpu_only(&self) -> bool {
        self.cpu_depth > 0 && self.gpu_depth == 0
    }
}

thread_local! {
    static STATE: Cell<ScopeState> = const { Cell::new(ScopeState { cpu_depth: 0, gpu_depth: 0, layer: None, device: None }) };
}

/// This thread's gate state.
pub fn current() -> ScopeState {
    STATE.with(|s| s.get())
}

/// Restores the previous state on drop.
#[must_use]
pub struct StateGuard(ScopeState);

impl Drop for StateGuard {
    fn drop(&mut self) {
        STATE.with(|s| s.set(self.0));
    }
}

fn replace(new: ScopeState) -> StateGuard {
    StateGuard(STATE.with(|s| s.replace(new)))
}

/// Adopt `state` on this thread (pool workers adopt their caller's) until the guard drops.
pub fn adopt(state: ScopeState) -> StateGuard {
    replace(state)
}

/// Run `f` with every GPU gate off on this thread (nestable, restored on panic).
pub fn cpu_scope<R>(f: impl FnOnce() -> R) -> R {
    let mut s = current();
    s.cpu_depth += 1;
    s.gpu_depth = 0;
    let _g = replace(s);
    f()
}

/// Re-open the gate inside a held CPU scope (device-owned sub-work).
pub fn gpu_scope<R>(f: impl FnOnce() -> R) -> R {
    let mut s = current();
    s.gpu_depth += 1;
    let _g = replace(s);
    f()
}

/// Mark the current layer for `CMF_GPU_LAYERS` until the guard drops.
pub fn in_layer(layer: Option<u32>) -> StateGuard {
    let mut s = current();
    s.layer = layer;
    replace(s)
}

/// Run `f` with this thread pinned to device `index`.
pub fn with_device<R>(index: usize, f: impl FnOnce() -> R) -> R {
    let mut s = current();
    s.device = Some(index);
    let _g = replace(s);
    f()
}

static PAUSES: AtomicUsize = AtomicUsize::new(0);

/// A process-wide pause of the GPU, counted by live guards: the device comes back only
/// when the last one drops.
#[must_use]
pub struct PauseGuard(());

pub fn pause_gpu() -> PauseGuard {
    PAUSES.fetch_add(1, Ordering::SeqCst);
    PauseGuard(())
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        PAUSES.fetch_sub(1, Ordering::SeqCst);
    }
}

pub fn paused() -> bool {
    PAUSES.load(Ordering::SeqCst) > 0
}

/// Which layers may use the GPU (`CMF_GPU_LAYERS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayerFilter {
    All,
    /// Inclusive ranges.
    Only(Vec<(u32, u32)>),
}

impl LayerFilter {
    /// Parse "0-19", "0,2,4", "0-9,30-39". `Err` names the bad part; callers then use `All`.
    pub fn parse(spec: &str) -> Result<LayerFilter, String> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err("empty layer list".into());
        }
        let mut ranges = Vec::new();
        for part in spec.split(',') {
            let part = part.trim();
            let num = |s: &str| s.trim().parse::<u32>().map_err(|_| format!("'{part}' is not a layer number or range"));
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(part)?, num(part)?),
            };
            if a > b {
                return Err(format!("range '{part}' runs backwards"));
            }
            ranges.push((a, b));
        }
        Ok(LayerFilter::Only(ranges))
    }

    /// Layers outside the stack (embedding, head) are always allowed.
    pub fn allows(&self, layer: Option<u32>) -> bool {
        match (self, layer) {
            (LayerFilter::All, _) | (_, None) => true,
            (LayerFilter::Only(r), Some(l)) => r.iter().any(|&(a, b)| a <= l && l <= b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_scope_nests_and_restores_even_on_panic() {
        assert!(!current().cpu_only());
        cpu_scope(|| {
            assert!(current().cpu_only());
            cpu_scope(|| assert_eq!(current().cpu_depth, 2));
            assert_eq!(current().cpu_depth, 1);
            gpu_scope(|| assert!(!current().cpu_only()));
            assert!(current().cpu_only());
        });
        let r = std::panic::catch_unwind(|| cpu_scope(|| panic!("boom")));
        assert!(r.is_err());
        assert!(!current().cpu_only(), "scope restored after a panic");
    }

    #[test]
    fn pause_guards_are_counted() {
        let a = pause_gpu();
        let b = pause_gpu();
        assert!(paused());
        drop(a);
        assert!(paused(), "the device stays paused while one guard lives");
        drop(b);
        assert!(!paused());
    }

    #[test]
    fn layer_filter_parses_lists_and_ranges_and_rejects_junk() {
        let f = LayerFilter::parse("0-9,30-39").unwrap();
        assert!(f.allows(Some(0)) && f.allows(Some(9)) && f.allows(Some(35)) && !f.allows(Some(10)));
        assert!(f.allows(None), "embedding and head are always allowed");
        let g = LayerFilter::parse("0,2,4").unwrap();
        assert!(g.allows(Some(2)) && !g.allows(Some(3)));
        for bad in ["", "a-b", "5-2", "1,,2", "x"] {
            assert!(LayerFilter::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn device_pin_and_layer_mark_are_scoped() {
        with_device(1, || {
            assert_eq!(current().device, Some(1));
            let _l = in_layer(Some(3));
            assert_eq!(current().layer, Some(3));
        });
        assert_eq!(current().device, None);
        assert_eq!(current().layer, None);
    }
}
