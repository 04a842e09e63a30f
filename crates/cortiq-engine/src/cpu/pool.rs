//! The compute pool: persistent worker threads that spin briefly between jobs, so the
//! hundreds of short parallel regions of one decode token cost ~1 µs each instead of a
//! sleep/wake round trip. The calling thread works too. One job runs at a time; a call
//! made while the pool is busy (another thread, or from inside a task) runs serially.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::gpu::scope::{self, ScopeState};

/// How long an idle worker spins before it sleeps: longer than the gap between two
/// regions of a token (sampling included), far shorter than a user's pause.
const SPIN: Duration = Duration::from_micros(300);

/// One parallel-for in flight. Lives on the caller's stack; the caller does not return
/// before every worker has left it.
struct Job {
    run: *const (dyn Fn(usize) + Sync),
    n_tasks: usize,
    next: AtomicUsize,
    /// The caller's GPU gates (CPU scope, layer, device pin), adopted by every worker.
    scope: ScopeState,
}

struct Shared {
    /// Incremented for every new job; workers watch it.
    epoch: AtomicU64,
    job: AtomicU64,
    /// Workers currently inside a job.
    active: AtomicUsize,
    sleep_lock: Mutex<()>,
    wake: Condvar,
    sleepers: AtomicUsize,
    shutdown: AtomicBool,
}

// SAFETY: `Job.run` points at a `Sync` closure that outlives every access (see `run`).
unsafe impl Send for Job {}
unsafe impl Sync for Job {}

pub struct Pool {
    shared: Arc<Shared>,
    busy: Mutex<()>,
    threads: usize,
}

thread_local! {
    static IN_TASK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

static POOL: OnceLock<Pool> = OnceLock::new();
static REQUESTED_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Set the number of compute threads (before the first parallel call; later calls keep
/// the pool that exists). 0 = all cores.
pub fn set_threads(n: usize) {
    REQUESTED_THREADS.store(n, Ordering::Relaxed);
}

/// The process-wide pool.
pub fn pool() -> &'static Pool {
    POOL.get_or_init(|| {
        let n = match REQUESTED_THREADS.load(Ordering::Relaxed) {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            n => n,
        };
        Pool::new(n)
    })
}

/// Run `f(0..n_tasks)` on the process pool.
pub fn parallel_for(n_tasks: usize, f: impl Fn(usize) + Sync) {
    pool().run(n_tasks, &f)
}

impl Pool {
    fn new(threads: usize) -> Pool {
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            job: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            sleep_lock: Mutex::new(()),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
        });
        for i in 1..threads {
            let s = Arc::clone(&shared);
            let spawned = std::thread::Builder::new().name(format!("cortiq-worker-{i}")).spawn(move || worker(&s));
            if spawned.is_err() {
                break;
            }
        }
        Pool { shared, busy: Mutex::new(()), threads }
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Run `f` for every task index; returns when all are done.
    pub fn run(&self, n_tasks: usize, f: &(dyn Fn(usize) + Sync)) {
        let nested = IN_TASK.with(|c| c.get());
        let guard = if nested || self.threads == 1 || n_tasks <= 1 { None } else { self.busy.try_lock().ok() };
        let Some(_guard) = guard else {
            (0..n_tasks).for_each(f);
            return;
        };
        // SAFETY (lifetime erasure): the job and `f` stay alive until `active` drops back
        // to zero below, after which no worker touches them.
        let run: *const (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(f) };
        let job = Job { run, n_tasks, next: AtomicUsize::new(0), scope: scope::current() };
        let s = &self.shared;
        s.job.store(&job as *const Job as u64, Ordering::Release);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _l = s.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        IN_TASK.with(|c| c.set(true));
        work_on(&job);
        IN_TASK.with(|c| c.set(false));
        // Every task was claimed; wait for workers still finishing theirs, then retire
        // the job pointer so a late worker cannot enter it.
        // SeqCst on both sides (here and in `worker`): a store followed by a load of
        // another variable must not be reordered, or a worker could enter a retired job.
        s.job.store(0, Ordering::SeqCst);
        while s.active.load(Ordering::SeqCst) != 0 {
            std::hint::spin_loop();
        }
    }
}

fn work_on(job: &Job) {
    loop {
        let t = job.next.fetch_add(1, Ordering::AcqRel);
        if t >= job.n_tasks {
            return;
        }
        // SAFETY: see `Pool::run`.
        unsafe { (*job.run)(t) };
    }
}

fn worker(s: &Shared) {
    IN_TASK.with(|c| c.set(true));
    let mut seen = s.epoch.load(Ordering::Acquire);
    loop {
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let e = s.epoch.load(Ordering::Acquire);
            if e != seen || s.shutdown.load(Ordering::Relaxed) {
                seen = e;
                break;
            }
            spins += 1;
            if spins.is_multiple_of(1024) && start.elapsed() > SPIN {
                let mut l = s.sleep_lock.lock().unwrap_or_else(|e| e.into_inner());
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                while s.epoch.load(Ordering::SeqCst) == seen && !s.shutdown.load(Ordering::Relaxed) {
                    l = s.wake.wait(l).unwrap_or_else(|e| e.into_inner());
                }
                s.sleepers.fetch_sub(1, Ordering::AcqRel);
            }
            std::hint::spin_loop();
        }
        if s.shutdown.load(Ordering::Relaxed) {
            return;
        }
        s.active.fetch_add(1, Ordering::SeqCst);
        let ptr = s.job.load(Ordering::SeqCst);
        if ptr != 0 {
            // SAFETY: the caller keeps the job alive while `active` > 0.
            let job = unsafe { &*(ptr as *const Job) };
            let _inherited = scope::adopt(job.scope);
            work_on(job);
        }
        s.active.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_exactly_once_including_nested_and_concurrent_calls() {
        let p = Pool::new(3);
        for n in [0usize, 1, 2, 7, 1000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            p.run(n, &|t| {
                hits[t].fetch_add(1, Ordering::Relaxed);
                // A nested call runs serially on this thread.
                p.run(2, &|_| {});
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "n={n}");
        }
        let total = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..50 {
                        p.run(10, &|_| {
                            total.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 50 * 10);
    }

    #[test]
    fn workers_inherit_the_callers_cpu_scope_and_device_pin() {
        let p = Pool::new(2);
        let seen = std::sync::Mutex::new(Vec::new());
        scope::cpu_scope(|| {
            scope::with_device(3, || {
                p.run(64, &|_| seen.lock().unwrap().push(scope::current()));
            })
        });
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 64);
        assert!(seen.iter().all(|s| s.cpu_only() && s.device == Some(3)));
        p.run(8, &|_| assert!(!scope::current().cpu_only(), "scope does not leak into later jobs"));
    }
}
