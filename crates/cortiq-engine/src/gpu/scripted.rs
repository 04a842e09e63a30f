//! A scripted backend for tests: a "device" that computes with the CPU kernels (so its
//! results are exact) and whose speed, declines and failures the test sets. It lets the
//! probe, fallback and graph rules run end to end through the real pipeline on CI.

use super::backend::{Backend, DeviceInfo, DeviceOutcome, FfnJob, GraphRead, GraphReadback, MatmulJob, MultiMatmulJob, PrefillGraphJob, TokenGraphJob};
use super::{scope, Gpu, GpuConfig};
use crate::cpu::matmul::{ffn_gated, matmul, matmul_many};
use crate::kv::KvCache;
use crate::pipeline::Session;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
pub struct Scripted {
    pub discrete: bool,
    /// Decline every stateless job.
    pub decline_ops: bool,
    /// Extra time every stateless job takes.
    pub delay: Duration,
    /// Whether the token graph is offered at all.
    pub graph: bool,
    /// Whether the batched prefill graph is offered.
    pub prefill: bool,
    /// Most rows a prefill-graph call takes (`Backend::prefill_rows`; None: the session's chunk).
    pub prefill_rows: Option<usize>,
    /// A device prefix: the token graph runs this many leading layers (`graph_layers`).
    pub prefix_layers: Option<usize>,
    /// Fail the n-th graph call (token or prefill, 1-based) after admitting state.
    pub fail_graph_call: Option<usize>,
    pub graph_calls: AtomicUsize,
    pub op_calls: AtomicUsize,
    pub resident: Mutex<HashSet<u64>>,
    pub uploaded: AtomicU64,
    /// Device KV mirrors: one CPU session per sequence (shared, so a test can watch them).
    pub mirrors: Arc<Mutex<HashMap<u64, Session>>>,
}

impl Scripted {
    /// Mark weights resident; true when any was not (the call is cold).
    fn upload(&self, keys: &[(u64, usize)]) -> bool {
        let mut r = self.resident.lock().unwrap();
        let mut cold = false;
        for &(k, bytes) in keys {
            if r.insert(k) {
                self.uploaded.fetch_add(bytes as u64, Ordering::SeqCst);
                cold = true;
            }
        }
        cold
    }

    /// A graph call on the sequence's mirror (a CPU session holding exactly `pos` rows,
    /// seeded from the host cache when it does not): counted, failed when scripted to.
    fn on_mirror(&self, model: &crate::model::Llama, seq: u64, pos: usize, host_kv: &KvCache, run: impl FnOnce(&mut Session) -> GraphRead, out: GraphReadback) -> DeviceOutcome {
        let call = self.graph_calls.fetch_add(1, Ordering::SeqCst) + 1;
        let mut mirrors = self.mirrors.lock().unwrap();
        if self.fail_graph_call == Some(call) {
            mirrors.remove(&seq);
            return DeviceOutcome::Failed(format!("scripted device loss at graph call {call}"));
        }
        let mirror = mirrors.entry(seq).or_insert_with(|| {
            let model = Arc::new(crate::model::Llama::load(Arc::clone(&model.file)).expect("model loads"));
            Session::with_gpu(model, host_kv.capacity(), Arc::new(Gpu::new(None, GpuConfig::for_tests())))
        });
        if mirror.len() != pos {
            // Seed from the host cache: a zero state is never assumed.
            mirror.truncate(0);
            for l in 0..host_kv.n_layer() {
                mirror.kv.write_f16(l, 0, host_kv.keys(l, pos), host_kv.values(l, pos));
            }
            mirror.kv.set_len(pos);
            mirror.set_len_for_tests(pos);
        }
        out.fill(scope::gpu_scope(|| run(mirror)));
        DeviceOutcome::Completed { cold: false }
    }

    fn op(&self, keys: &[(u64, usize)], run: impl FnOnce()) -> DeviceOutcome {
        self.op_calls.fetch_add(1, Ordering::SeqCst);
        if self.decline_ops {
            return DeviceOutcome::Declined("scripted decline");
        }
        let cold = self.upload(keys);
        // Device work may use the CPU kernels: a device-owned scope inside any CPU scope.
        scope::gpu_scope(run);
        std::thread::sleep(self.delay);
        DeviceOutcome::Completed { cold }
    }
}

/// The readback asked for, from the mirror's logits.
fn read_back(logits: Vec<f32>, wants_logits: bool) -> GraphRead {
    if wants_logits {
        GraphRead::Logits(logits)
    } else {
        GraphRead::Argmax(crate::sample::argmax(&logits))
    }
}

impl Backend for Scripted {
    fn info(&self) -> DeviceInfo {
        DeviceInfo { backend: "scripted", name: "Scripted GPU".into(), discrete: self.discrete, memory_bytes: 1 << 30, f16: true, subgroups: true, matrix_units: false, max_binding_bytes: 1 << 30, q8_activations: false, q8_matvec: false }
    }

    fn is_resident(&self, key: u64) -> bool {
        self.resident.lock().unwrap().contains(&key)
    }

    fn matmul(&self, job: &MatmulJob, out: &mut [f32]) -> DeviceOutcome {
        self.op(&[(job.w.key, job.w.view.bytes.len())], || matmul(&job.w.view, job.x, job.batch, out))
    }

    fn matmul_many(&self, job: &MultiMatmulJob, outs: &mut [&mut [f32]]) -> DeviceOutcome {
        let keys: Vec<_> = job.ws.iter().map(|w| (w.key, w.view.bytes.len())).collect();
        self.op(&keys, || {
            let mut jobs: Vec<_> = job.ws.iter().zip(outs.iter_mut()).map(|(w, o)| (w.view, &mut **o)).collect();
            matmul_many(&mut jobs, job.x, job.batch);
        })
    }

    fn ffn(&self, job: &FfnJob, out: &mut [f32]) -> DeviceOutcome {
        let keys = [(job.gate.key, job.gate.view.bytes.len()), (job.up.key, job.up.view.bytes.len()), (job.down.key, job.down.view.bytes.len())];
        self.op(&keys, || ffn_gated(&job.gate.view, &job.up.view, &job.down.view, job.act, job.x, job.batch, out))
    }

    fn token_graph(&self, job: &TokenGraphJob, out: GraphReadback) -> DeviceOutcome {
        if !self.graph {
            return DeviceOutcome::Declined("cannot build a graph for this model (scripted)");
        }
        if job.layers < job.model.layers.len() {
            return self.on_mirror(job.model, job.seq, job.pos, job.host_kv, |m| GraphRead::Hidden(m.prefix_for_tests(&[job.token], job.layers)), out);
        }
        let wants_logits = out.wants_logits();
        self.on_mirror(job.model, job.seq, job.pos, job.host_kv, |m| read_back(m.step(job.token).expect("mirror step"), wants_logits), out)
    }

    fn graph_layers(&self, model: &crate::model::Llama) -> usize {
        self.prefix_layers.unwrap_or(model.layers.len())
    }

    fn prefill_graph(&self, job: &PrefillGraphJob, out: GraphReadback) -> DeviceOutcome {
        if !self.prefill {
            return DeviceOutcome::Declined("prefill graph not offered (scripted)");
        }
        if job.tokens.len() > self.prefill_rows(job.model) {
            return DeviceOutcome::Declined("prompt chunk longer than the prefill graph takes (scripted)");
        }
        if job.layers < job.model.layers.len() {
            return self.on_mirror(job.model, job.seq, job.pos, job.host_kv, |m| GraphRead::Hidden(m.prefix_for_tests(job.tokens, job.layers)), out);
        }
        let wants_logits = out.wants_logits();
        self.on_mirror(
            job.model,
            job.seq,
            job.pos,
            job.host_kv,
            |m| {
                let h = m.forward(job.tokens).expect("mirror prefill");
                read_back(m.logits(&h[h.len() - m.model.cfg.n_embd..]), wants_logits)
            },
            out,
        )
    }

    fn prefill_rows(&self, _model: &crate::model::Llama) -> usize {
        self.prefill_rows.unwrap_or(crate::pipeline::PREFILL_CHUNK)
    }

    fn pull_kv(&self, seq: u64, from: usize, to: usize, host: &mut KvCache) -> Result<(), String> {
        let mirrors = self.mirrors.lock().unwrap();
        let m = mirrors.get(&seq).ok_or("no mirror for this sequence")?;
        let d = host.kv_dim();
        // A device prefix's mirror holds its own layers' rows; the host wrote the others.
        for l in 0..self.prefix_layers.unwrap_or(host.n_layer()) {
            host.write_f16(l, from, &m.kv.keys(l, to)[from * d..], &m.kv.values(l, to)[from * d..]);
        }
        host.set_len(to);
        Ok(())
    }

    fn reset_sequence(&self, seq: u64) {
        self.mirrors.lock().unwrap().remove(&seq);
    }

    fn upload_bytes(&self) -> u64 {
        self.uploaded.load(Ordering::SeqCst)
    }
}
