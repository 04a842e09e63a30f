//! The noise floor that the device parity bounds rest on. The CPU path multiplies int8-quantized
//! activations (ggml's Q8_0 rule); rounding to int8 is discontinuous, so a last-bit difference
//! anywhere (a device's summation order, a fused norm) flips some roundings, and over the
//! layers the two runs decorrelate to the level of the quantization noise itself. This test
//! measures that floor on the CPU alone: the same model with one layer's norm weights moved by
//! one ulp. A device path is held to its CPU twin within 5% relative L2 (tests/gpu_parity.rs;
//! for prompts, or twice this floor measured on the same prompt where a model amplifies more:
//! the synthesized llama-1b measures 3.9-6.2e-2); the 5% must sit above the floor of these
//! small shapes, and the floor must be far above summation-order noise, or the bound would be
//! hiding something else.
mod common;

use common::{pick_gap, rel_l2, ulp_moved};
use cortiq_engine::pipeline::Session;
use std::sync::Arc;

/// The same synthesized q4_0 model (seed 7) twice, the second with one ulp moved in one norm,
/// each prefilled with the per-op greedy test's prompt in a session with room for `steps`
/// more tokens: the two sessions and their logits.
fn twin_runs(dir: &std::path::Path, shape: &str, steps: usize) -> ((Session, Vec<f32>), (Session, Vec<f32>)) {
    let path = dir.join(format!("{shape}.gguf"));
    cortiq_engine::synth::synth(shape, "q4_0", &path, 7).unwrap();
    let moved = ulp_moved(&path);
    let (a, b) = (cortiq_engine::generate::Engine::load(&path).unwrap(), cortiq_engine::generate::Engine::load(&moved).unwrap());
    let prompt = a.tokenize("The quick brown fox jumps over the lazy dog, 1 2 3").unwrap();
    let run = |e: &cortiq_engine::generate::Engine| {
        let mut s = Session::new(Arc::clone(&e.model), prompt.len() + steps + 1);
        let l = s.prefill(&prompt).unwrap();
        (s, l)
    };
    (run(&a), run(&b))
}

#[test]
fn one_ulp_in_one_norm_moves_int8_logits_by_the_quantization_noise() {
    let dir = tempfile::tempdir().unwrap();
    for shape in ["tiny", "smollm2-135m"] {
        let steps = 32;
        let ((mut sa, mut la), (mut sb, mut lb)) = twin_runs(dir.path(), shape, steps);
        let mut worst = rel_l2(&la, &lb);
        for _ in 0..steps {
            let t = cortiq_engine::sample::argmax(&la);
            la = sa.step(t).unwrap();
            lb = sb.step(t).unwrap();
            worst = worst.max(rel_l2(&la, &lb));
        }
        eprintln!("{shape} q4_0: one ulp in blk.0.attn_norm moves the CPU's logits by {worst:.2e} relative L2 (worst of prefill and {steps} steps)");
        assert!(worst > 1e-3, "{shape}: int8 rounding no longer amplifies last-bit differences ({worst:.2e}); the 5% device bound can be tightened");
        assert!(worst < 5e-2, "{shape}: the CPU's own int8 noise floor ({worst:.2e}) reaches the 5% device bound");
    }
}

/// How often the CPU's own greedy pick flips when one norm moves by one ulp, on the shapes
/// and prompt of the per-op greedy test (`gpu_parity wgpu_per_op_greedy_matches_the_cpu_path`,
/// synth seed 7): teacher-forced along the unmoved model's picks for 64 steps, the steps whose
/// argmax differs, each of which must be a near-tie (the gap between the two tokens within
/// the runs' largest logit difference). A device path cannot agree with the CPU more often than
/// the CPU agrees with itself under a last-bit change. llama-1b takes minutes on two cores:
/// `cargo test --release -p cortiq-engine --test int8_noise -- --ignored --nocapture`.
#[test]
#[ignore = "synthesizes and decodes llama-1b on the CPU: run by hand (see the doc comment)"]
fn one_ulp_flips_the_cpus_own_greedy_picks_only_at_near_ties() {
    let dir = tempfile::tempdir().unwrap();
    for shape in ["smollm2-135m", "llama-1b"] {
        let steps = 64;
        let ((mut sa, mut la), (mut sb, mut lb)) = twin_runs(dir.path(), shape, steps);
        let mut same = 0;
        for i in 0..steps {
            let (t, u) = (cortiq_engine::sample::argmax(&la), cortiq_engine::sample::argmax(&lb));
            if t == u {
                same += 1;
            } else {
                let (gap, noise) = pick_gap(&la, &lb, t, u);
                eprintln!("{shape} q4_0: step {i}: {t} vs {u} with one ulp moved (gap {gap:.3}, largest logit difference {noise:.3})");
                assert!(gap <= noise, "{shape}: step {i}: the pick moved beyond a near-tie");
            }
            la = sa.step(t).unwrap();
            lb = sb.step(t).unwrap();
        }
        eprintln!("{shape} q4_0: one ulp in blk.0.attn_norm: the CPU's greedy picks agree with its own {same}/{steps} times");
    }
}
