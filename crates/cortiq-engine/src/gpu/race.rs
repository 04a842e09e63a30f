//! Generation-level graph race (SPEC section 10) and the contention kill (section 11), as
//! pure decision logic: the caller feeds times, these say what to do.

use std::time::Duration;

/// Steady samples (generations) per arm before the race is decided.
pub const RACE_SAMPLES: usize = 4;
/// First-token bail: a graph first token this many times the per-op average...
pub const BAIL_RATIO: f64 = 4.0;
/// ...and longer than this settles the race at once for the per-op path.
pub const BAIL_MIN: Duration = Duration::from_secs(1);

/// The two ways to run a decode token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphArm {
    PerOp,
    Graph,
}

/// The race between the per-op path and the whole-token graph, on adapters where the graph
/// is not trusted. Arms switch only between generations, so the device mirror and the host
/// cache never diverge mid-sequence.
#[derive(Debug, Clone, Default)]
pub struct GraphRace {
    per_op: Vec<f64>,
    graph: Vec<f64>,
    generations: usize,
    pub winner: Option<GraphArm>,
}

impl GraphRace {
    /// The arm for the next generation: the winner once decided, else alternating, per-op first.
    pub fn arm_for_generation(&self) -> GraphArm {
        match self.winner {
            Some(w) => w,
            None if self.generations.is_multiple_of(2) => GraphArm::PerOp,
            None => GraphArm::Graph,
        }
    }

    /// Record a finished generation's per-token wall times (its first token is discarded as
    /// not steady). A generation with no steady token counts for nothing.
    pub fn record_generation(&mut self, arm: GraphArm, token_times: &[Duration]) {
        self.generations += 1;
        if self.winner.is_some() || token_times.len() < 2 {
            return;
        }
        let steady = &token_times[1..];
        let mean = steady.iter().map(Duration::as_secs_f64).sum::<f64>() / steady.len() as f64;
        match arm {
            GraphArm::PerOp => self.per_op.push(mean),
            GraphArm::Graph => self.graph.push(mean),
        }
        if self.per_op.len() >= RACE_SAMPLES && self.graph.len() >= RACE_SAMPLES {
            let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            self.winner = Some(if avg(&self.graph) <= avg(&self.per_op) { GraphArm::Graph } else { GraphArm::PerOp });
        }
    }

    /// Check a graph generation's first token. `true` means bail: the race is settled for
    /// the per-op path and that token must be recomputed there.
    pub fn first_graph_token(&mut self, t: Duration) -> bool {
        if self.winner.is_some() || self.per_op.is_empty() {
            return false;
        }
        let per_op_avg = self.per_op.iter().sum::<f64>() / self.per_op.len() as f64;
        let bail = t.as_secs_f64() > BAIL_RATIO * per_op_avg && t > BAIL_MIN;
        if bail {
            self.winner = Some(GraphArm::PerOp);
        }
        bail
    }
}

/// A wide GEMM this many times over its work-proportional budget is a strike.
pub const KILL_FACTOR: f64 = 8.0;
/// Strikes in a row that mean another process owns the device.
pub const KILL_STRIKES: usize = 3;

/// Contention kill: wide GEMMs running far over their budget three times in a row send the
/// rest of the process to the CPU. The budget is `flops / best throughput seen * KILL_FACTOR`.
#[derive(Debug, Clone, Default)]
pub struct ContentionKill {
    best_flops_per_s: f64,
    strikes: usize,
    pub killed: bool,
    /// `CMF_MM_KILL=0`, or a phase that expects slowness.
    pub disarmed: bool,
}

impl ContentionKill {
    /// A fresh detector; `armed = false` for `CMF_MM_KILL=0`.
    pub fn new(armed: bool) -> Self {
        ContentionKill { disarmed: !armed, ..Default::default() }
    }

    /// Record one wide GEMM of `flops` that took `t`; returns true when this kills the GPU.
    pub fn record(&mut self, flops: f64, t: Duration) -> bool {
        let secs = t.as_secs_f64().max(1e-9);
        let rate = flops / secs;
        if self.best_flops_per_s == 0.0 {
            self.best_flops_per_s = rate;
            return false;
        }
        let budget = flops / self.best_flops_per_s * KILL_FACTOR;
        if secs > budget {
            self.strikes += 1;
        } else {
            self.strikes = 0;
        }
        self.best_flops_per_s = self.best_flops_per_s.max(rate);
        if !self.disarmed && self.strikes >= KILL_STRIKES {
            self.killed = true;
        }
        self.killed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn race_alternates_per_op_first_and_decides_after_four_steady_samples_each() {
        let mut r = GraphRace::default();
        let mut arms = Vec::new();
        for _ in 0..8 {
            let arm = r.arm_for_generation();
            arms.push(arm);
            let t = if arm == GraphArm::Graph { 2 } else { 5 };
            // The first token (slow, not steady) is discarded.
            r.record_generation(arm, &[ms(500), ms(t), ms(t)]);
        }
        assert_eq!(arms[0], GraphArm::PerOp);
        assert_eq!(arms[1], GraphArm::Graph);
        assert_eq!(r.winner, Some(GraphArm::Graph));
        assert_eq!(r.arm_for_generation(), GraphArm::Graph);
    }

    #[test]
    fn race_undecided_with_three_samples_per_arm() {
        let mut r = GraphRace::default();
        for _ in 0..6 {
            let arm = r.arm_for_generation();
            r.record_generation(arm, &[ms(1), ms(1), ms(1)]);
        }
        assert_eq!(r.winner, None);
    }

    #[test]
    fn first_token_bail_needs_four_x_and_one_second() {
        let mut r = GraphRace::default();
        r.record_generation(GraphArm::PerOp, &[ms(10), ms(100), ms(100)]);
        assert!(!r.first_graph_token(ms(900)), "under 1 s is not a bail even at 9x");
        assert!(r.first_graph_token(Duration::from_millis(1100)), "over 4x and over 1 s");
        assert_eq!(r.winner, Some(GraphArm::PerOp));
        let mut s = GraphRace::default();
        s.record_generation(GraphArm::PerOp, &[ms(10), ms(400), ms(400)]);
        assert!(!s.first_graph_token(ms(1500)), "1.5 s is under 4x 400 ms");
        assert!(s.first_graph_token(ms(1700)));
        assert_eq!(s.winner, Some(GraphArm::PerOp));
    }

    #[test]
    fn contention_kill_needs_three_slow_gemms_in_a_row() {
        let mut k = ContentionKill::default();
        let flops = 1e9;
        k.record(flops, ms(1));
        assert!(!k.record(flops, ms(20)));
        assert!(!k.record(flops, ms(20)));
        assert!(!k.record(flops, ms(1)), "a normal GEMM resets the strikes (one page-in is not contention)");
        assert!(!k.record(flops, ms(20)));
        assert!(!k.record(flops, ms(20)));
        assert!(k.record(flops, ms(20)));
        let mut off = ContentionKill::new(false);
        off.record(flops, ms(1));
        for _ in 0..5 {
            assert!(!off.record(flops, ms(50)));
        }
    }
}
