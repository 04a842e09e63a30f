//! Sampling from logits: greedy, temperature, top-k, top-p, min-p, repetition penalty,
//! with a seeded random source so a seed reproduces a generation.

use cortiq_core::rng::SplitMix64;

#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// <= 0 means greedy.
    pub temperature: f32,
    /// 0 disables.
    pub top_k: usize,
    /// 1.0 disables.
    pub top_p: f32,
    /// 0.0 disables.
    pub min_p: f32,
    /// 1.0 disables.
    pub repeat_penalty: f32,
    /// How many recent tokens the penalty looks at.
    pub repeat_last_n: usize,
    pub seed: u64,
}

impl Default for SamplerConfig {
    /// llama.cpp's defaults.
    fn default() -> Self {
        SamplerConfig { temperature: 0.8, top_k: 40, top_p: 0.95, min_p: 0.05, repeat_penalty: 1.0, repeat_last_n: 64, seed: 0x5EED }
    }
}

pub struct Sampler {
    cfg: SamplerConfig,
    rng: SplitMix64,
}

/// What a device needs to draw sampled tokens from the top-k candidates as
/// `Sampler::sample_candidates` will draw them: the sampler's temperature, min-p and top-p,
/// and its next two random draws (the next token's, and the one after it, for a token a
/// device queues behind the next). The host's own draw still decides; a device draw only
/// lets the next token start before the host has seen the candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrawSpec {
    pub temperature: f32,
    pub min_p: f32,
    pub top_p: f32,
    /// Uniform draws in [0, 1), in the order `sample_candidates` consumes them.
    pub draws: [f32; 2],
}

/// Index of the largest logit (first on ties; NaN is never chosen; 0 if none is a number).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best: Option<usize> = None;
    for (i, &v) in logits.iter().enumerate() {
        if !v.is_nan() && best.is_none_or(|b| v > logits[b]) {
            best = Some(i);
        }
    }
    best.unwrap_or(0) as u32
}

/// Candidate order: larger logit first, then lower index.
fn by_logit(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The `k` largest finite logits (all of them when `k` is 0) as (index, logit), in
/// `by_logit` order. One pass that keeps at most 2k candidates and skips, with one
/// comparison, every logit below the k-th largest seen so far (a vocabulary of 128 k costs
/// about what reading it does).
pub fn top_candidates(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    let finite = logits.iter().enumerate().filter(|(_, l)| l.is_finite()).map(|(i, &l)| (i as u32, l));
    if k == 0 || k >= logits.len() {
        let mut all: Vec<(u32, f32)> = finite.collect();
        all.sort_unstable_by(by_logit);
        return all;
    }
    let mut keep: Vec<(u32, f32)> = Vec::with_capacity(2 * k);
    let mut floor = f32::NEG_INFINITY;
    for (i, l) in finite {
        if l < floor {
            continue;
        }
        keep.push((i, l));
        if keep.len() == 2 * k {
            keep.select_nth_unstable_by(k - 1, by_logit);
            keep.truncate(k);
            floor = keep[k - 1].1;
        }
    }
    if keep.len() > k {
        keep.select_nth_unstable_by(k - 1, by_logit);
        keep.truncate(k);
    }
    keep.sort_unstable_by(by_logit);
    keep
}

impl Sampler {
    pub fn new(cfg: SamplerConfig) -> Self {
        let rng = SplitMix64::new(cfg.seed);
        Sampler { cfg, rng }
    }

    /// Whether every pick is the plain argmax of the logits (greedy, no repetition penalty):
    /// then a device may pick the token and read back only its index.
    pub fn is_plain_argmax(&self) -> bool {
        self.cfg.temperature <= 0.0 && self.cfg.repeat_penalty == 1.0
    }

    /// Some(k) when every pick depends only on the k largest finite logits (a temperature,
    /// top-k on, no repetition penalty): then a device may pick those k candidates and read
    /// back only them (`sample_candidates`).
    pub fn candidates_needed(&self) -> Option<usize> {
        let c = &self.cfg;
        (c.temperature > 0.0 && c.repeat_penalty == 1.0 && c.top_k > 0).then_some(c.top_k)
    }

    /// The parameters and next two random draws of this sampler's picks from candidates
    /// (`DrawSpec`); None where picks do not come from the top-k candidates alone.
    pub fn draw_spec(&self) -> Option<DrawSpec> {
        self.candidates_needed()?;
        let mut rng = self.rng.clone();
        let draws = [rng.uniform(), rng.uniform()];
        Some(DrawSpec { temperature: self.cfg.temperature, min_p: self.cfg.min_p, top_p: self.cfg.top_p, draws })
    }

    /// Pick the next token from `logits`, given the tokens so far (for the penalty).
    pub fn sample(&mut self, logits: &[f32], history: &[u32]) -> u32 {
        let c = &self.cfg;
        let mut penalized = None;
        if c.repeat_penalty != 1.0 {
            let mut l = logits.to_vec();
            let start = history.len().saturating_sub(c.repeat_last_n);
            for &t in &history[start..] {
                if let Some(v) = l.get_mut(t as usize) {
                    *v = if *v > 0.0 { *v / c.repeat_penalty } else { *v * c.repeat_penalty };
                }
            }
            penalized = Some(l);
        }
        let logits = penalized.as_deref().unwrap_or(logits);
        if c.temperature <= 0.0 {
            return argmax(logits);
        }
        // Candidates sorted by logit, cut by top-k.
        let cand = top_candidates(logits, c.top_k);
        if cand.is_empty() {
            return argmax(logits);
        }
        self.sample_candidates(&cand)
    }

    /// Pick the next token from the candidates `top_candidates` gives for this sampler's
    /// top-k (what `sample` does after cutting them, with the same random draws); 0 when
    /// there are none (no finite logit).
    pub fn sample_candidates(&mut self, cand: &[(u32, f32)]) -> u32 {
        if cand.is_empty() {
            return 0;
        }
        let u = self.rng.uniform();
        draw(cand, self.cfg.temperature, self.cfg.min_p, self.cfg.top_p, u)
    }
}

/// The token drawn from non-empty candidates (`top_candidates` order) with the uniform draw
/// `u`: probabilities at `temperature`, cut by min-p (tokens below min_p * p(best)), then by
/// top-p (the smallest prefix whose mass reaches top_p), then the token whose slice of the
/// kept mass holds u * kept. In f32, summed in candidate order (topk_draw.wgsl restates it).
pub fn draw(cand: &[(u32, f32)], temperature: f32, min_p: f32, top_p: f32, u: f32) -> u32 {
    let max = cand[0].1;
    let mut probs: Vec<f32> = cand.iter().map(|(_, l)| ((l - max) / temperature).exp()).collect();
    let total: f32 = probs.iter().sum();
    probs.iter_mut().for_each(|p| *p /= total);
    let floor = min_p * probs[0];
    let mut keep = probs.iter().take_while(|&&p| p >= floor).count().max(1);
    let mut mass = 0.0;
    for (i, &p) in probs.iter().enumerate().take(keep) {
        mass += p;
        if mass >= top_p {
            keep = i + 1;
            break;
        }
    }
    let kept: f32 = probs[..keep].iter().sum();
    let mut r = u * kept;
    for (i, &p) in probs[..keep].iter().enumerate() {
        if r < p {
            return cand[i].0;
        }
        r -= p;
    }
    cand[keep - 1].0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidates by a full sort (every finite logit in `by_logit` order, cut at k): the
    /// one-pass `top_candidates` must give the same list.
    fn candidates_by_full_sort(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut cand: Vec<(u32, f32)> = logits.iter().enumerate().filter(|(_, l)| l.is_finite()).map(|(i, &l)| (i as u32, l)).collect();
        let k = if k == 0 { cand.len() } else { k.min(cand.len()) };
        cand.sort_by(by_logit);
        cand.truncate(k);
        cand
    }

    #[test]
    fn one_pass_top_k_equals_the_full_sort() {
        let mut rng = SplitMix64::new(7);
        for (n, k) in [(1, 1), (5, 40), (100, 40), (49152, 40), (128256, 40), (1000, 1), (1000, 0), (1000, 999), (1000, 1000), (3000, 7)] {
            // Continuous values, then a coarse grid (many exact ties), then non-finite ones mixed in.
            for variant in 0..3 {
                let logits: Vec<f32> = (0..n)
                    .map(|i| {
                        let v = rng.uniform() * 20.0 - 10.0;
                        match variant {
                            0 => v,
                            1 => v.round(),
                            _ if i % 97 == 3 => [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][i % 3],
                            _ => v,
                        }
                    })
                    .collect();
                assert_eq!(top_candidates(&logits, k), candidates_by_full_sort(&logits, k), "n {n}, k {k}, variant {variant}");
            }
        }
        assert!(top_candidates(&[f32::NAN, f32::NEG_INFINITY], 40).is_empty());
    }

    #[test]
    fn greedy_picks_argmax_and_penalty_can_change_it() {
        let logits = vec![0.1, 3.0, 2.9, -1.0];
        let mut s = Sampler::new(SamplerConfig { temperature: 0.0, ..Default::default() });
        assert_eq!(s.sample(&logits, &[]), 1);
        let mut p = Sampler::new(SamplerConfig { temperature: 0.0, repeat_penalty: 1.5, ..Default::default() });
        assert_eq!(p.sample(&logits, &[1]), 2);
    }

    #[test]
    fn argmax_takes_the_first_of_ties_and_never_a_nan() {
        assert_eq!(argmax(&[1.0, 5.0, 5.0, 2.0]), 1);
        assert_eq!(argmax(&[f32::NAN, -3.0, f32::NAN, -1.0]), 3);
        assert_eq!(argmax(&[-0.0, 0.0]), 0);
        assert_eq!(argmax(&[f32::NAN, f32::NAN]), 0);
        assert_eq!(argmax(&[f32::NEG_INFINITY, f32::INFINITY]), 1);
    }

    #[test]
    fn only_plain_greedy_is_plain_argmax() {
        assert!(Sampler::new(SamplerConfig { temperature: 0.0, ..Default::default() }).is_plain_argmax());
        assert!(!Sampler::new(SamplerConfig { temperature: 0.0, repeat_penalty: 1.1, ..Default::default() }).is_plain_argmax());
        assert!(!Sampler::new(SamplerConfig::default()).is_plain_argmax());
    }

    #[test]
    fn seeded_sampling_is_reproducible_and_respects_top_k() {
        let logits: Vec<f32> = (0..100).map(|i| (i as f32) * 0.05).collect();
        let cfg = SamplerConfig { temperature: 1.0, top_k: 5, top_p: 1.0, min_p: 0.0, seed: 42, ..Default::default() };
        let a: Vec<u32> = {
            let mut s = Sampler::new(cfg.clone());
            (0..50).map(|_| s.sample(&logits, &[])).collect()
        };
        let mut s = Sampler::new(cfg);
        let b: Vec<u32> = (0..50).map(|_| s.sample(&logits, &[])).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&t| t >= 95), "top-k 5 leaked: {a:?}");
        assert!(a.iter().collect::<std::collections::HashSet<_>>().len() > 1);
    }

    /// Sampling from the candidates alone (as a device that picks them hands them over)
    /// makes the same picks as sampling from the full logits, draw for draw; the sampler asks
    /// for candidates only where that holds.
    #[test]
    fn sampling_the_candidates_picks_as_sampling_the_logits() {
        let mut rng = SplitMix64::new(11);
        let logits: Vec<f32> = (0..5000).map(|i| if i % 211 == 5 { f32::NAN } else { (rng.uniform() * 8.0).round() * 0.5 }).collect();
        for cfg in [SamplerConfig::default(), SamplerConfig { temperature: 1.5, top_k: 64, top_p: 1.0, min_p: 0.0, seed: 3, ..Default::default() }] {
            let (mut full, mut cands) = (Sampler::new(cfg.clone()), Sampler::new(cfg.clone()));
            let k = cands.candidates_needed().expect("top-k on, a temperature, no penalty");
            assert_eq!(k, cfg.top_k);
            let cand = top_candidates(&logits, k);
            let a: Vec<u32> = (0..300).map(|_| full.sample(&logits, &[])).collect();
            let b: Vec<u32> = (0..300).map(|_| cands.sample_candidates(&cand)).collect();
            assert_eq!(a, b);
            assert!(a.iter().collect::<std::collections::HashSet<_>>().len() > 1);
        }
        let asks = |cfg: SamplerConfig| Sampler::new(cfg).candidates_needed();
        assert_eq!(asks(SamplerConfig { temperature: 0.0, ..Default::default() }), None);
        assert_eq!(asks(SamplerConfig { repeat_penalty: 1.1, ..Default::default() }), None);
        assert_eq!(asks(SamplerConfig { top_k: 0, ..Default::default() }), None);
    }

    /// The draw spec peeks the random draws the sampler's next two picks consume, and a
    /// draw with its first is that pick.
    #[test]
    fn the_draw_spec_holds_the_next_two_draws() {
        let mut rng = SplitMix64::new(5);
        let mut s = Sampler::new(SamplerConfig::default());
        for _ in 0..50 {
            let cand = top_candidates(&(0..300).map(|_| rng.uniform() * 10.0).collect::<Vec<_>>(), 40);
            let spec = s.draw_spec().unwrap();
            let (first, second) = (draw(&cand, spec.temperature, spec.min_p, spec.top_p, spec.draws[0]), s.sample_candidates(&cand));
            assert_eq!(first, second);
            assert_eq!(s.draw_spec().unwrap().draws[0], spec.draws[1]);
        }
        assert!(Sampler::new(SamplerConfig { temperature: 0.0, ..Default::default() }).draw_spec().is_none());
    }

    #[test]
    fn top_p_keeps_only_the_dominant_token() {
        let logits = vec![10.0, 0.0, 0.0, 0.0];
        let mut s = Sampler::new(SamplerConfig { temperature: 1.0, top_k: 0, top_p: 0.5, min_p: 0.0, seed: 1, ..Default::default() });
        assert!((0..20).all(|_| s.sample(&logits, &[]) == 0));
    }

    /// Benchmark, not a check: the default sampler's time per pick on random logits of
    /// SmolLM2's and Llama 3's vocabulary sizes (`cargo test --release -p cortiq-engine --lib
    /// sampler_speed -- --ignored --nocapture`). The checksum of the picks shows two builds
    /// chose the same tokens.
    #[test]
    #[ignore = "benchmark: run with --ignored --nocapture"]
    fn sampler_speed() {
        let mut rng = SplitMix64::new(1);
        for vocab in [49152usize, 128256] {
            let logits: Vec<f32> = (0..vocab).map(|_| rng.uniform() * 20.0 - 10.0).collect();
            let mut s = Sampler::new(SamplerConfig::default());
            let t = std::time::Instant::now();
            let checksum: u64 = (0..200).map(|_| s.sample(&logits, &[]) as u64).sum();
            eprintln!("vocab {vocab}: {:.1} us per pick (checksum {checksum})", t.elapsed().as_secs_f64() * 1e6 / 200.0);
        }
    }
}
