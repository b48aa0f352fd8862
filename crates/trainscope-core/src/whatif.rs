//! What-if analysis over the engine: what a set of injected faults
//! ([`crate::engine::faults`]) costs an iteration, who carries the cost
//! ("blame"), how sensitive a described job's stages are to a slow GPU,
//! and, for a measured per-rank replay, how much its slowest ranks cost
//! against every rank running at the ideal.
//!
//! The method is the what-if analysis of Lin et al., "Understanding
//! Stragglers in Large Model Training Using What-if Analysis" (OSDI 2025;
//! artifact `ByteDance-Seed/StragglerAnalysis`), written here from its
//! description: the slow-down is S = (step as run) / (step with every op
//! at its ideal), and a slice's share is found by simulating the run with
//! that slice put back to its ideal, one slice at a time:
//! `share = (as run - slice at ideal) / ideal`, in units of the ideal step,
//! so each share lies in [0, S - 1] (a slice whose ideal would make the
//! step longer, which the engine's orderings allow in rare cases, counts
//! 0). Shares need not add up to S - 1: slices that overlap in time hide
//! each other (two slow ranks of one group) and slices on parallel paths
//! each cost the whole delay alone.
//!
//! - Injected faults: the ideal is the run without them. Slices: by `op`
//!   (the compute slow-downs, the link slow-downs, the jitter, each as a
//!   whole), by `stage` (every compute fault on the stage's ranks), and, in
//!   per-rank jobs, by `rank` and by data-parallel `group`.
//! - Measured per-rank replays ([`measured`]): the ideal of each compute
//!   piece is the mean of that piece (same place in the program, same
//!   name) over every simulated rank that has it, as the artifact takes the
//!   mean per op type over ranks, stages and steps; collectives and
//!   transfers are already re-costed by the network model, so they are at
//!   the ideal in both runs. Slices: `rank`, `stage`, `group` and `op`
//!   (forward, input-gradient and weight-gradient compute, and the
//!   once-per-iteration rows such as the optimizer).
//! - Described jobs ([`sensitivity`]): every stage's ranks slowed in turn
//!   by one factor; what it costs the step and which wait grows most (a
//!   parallel group's exposed communication or the pipeline bubble).

use serde::{Deserialize, Serialize};

use crate::engine::faults::{Faults, RankScope, Window, MAX_ITERATIONS};
use crate::engine::network::{CollectiveCost, Placement};
use crate::engine::spec::{GroupKind, JobMode, JobSpec, LayerSpec, Phase};
use crate::engine::summary::Summary;
use crate::engine::{simulate_with, SimConfig, SimError};

/// How many ranks (and groups) get a slice of their own; the rest are in
/// their stage's slice. Keeps a blame of a large replay to a few seconds.
pub const MAX_RANK_SLICES: usize = 32;
/// The stages a sensitivity table covers at most (evenly spaced, first
/// and last included).
pub const MAX_SENSITIVITY_STAGES: usize = 32;
/// The slow-down a sensitivity table applies when none is given.
pub const DEFAULT_SENSITIVITY_FACTOR: f64 = 1.1;

/// The note of a run with a transient fault (a `--slow` window).
pub const WINDOW_NOTE: &str = "a slow-down with a window: the timeline and the summary are the run's first iteration; the what-if runs the iterations back to back until every window has ended and one more (whatif.iteration_times_ns)";

/// What a slice is cut along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlameBy {
    Rank,
    Stage,
    Group,
    Op,
}

/// One slice's share of the slow-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlameSlice {
    pub by: BlameBy,
    pub name: String,
    /// (as run - slice at its ideal) / ideal: between 0 and S - 1.
    pub share: f64,
    /// The step with this slice at its ideal, ns.
    pub iteration_time_ns: u64,
}

/// One stage of a sensitivity table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSensitivity {
    pub stage: u32,
    pub factor: f64,
    pub iteration_time_ns: u64,
    /// What slowing the stage costs the step, percent.
    pub cost_percent: f64,
    /// Where the others wait for it most: `TP`, `EP`, `DP`, `DP_EP`, `PP`,
    /// `CP` (that group's exposed communication grew most) or `bubble`.
    pub carried_by: String,
}

/// The `whatif` object of the JSON report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIfReport {
    /// What the ideal run is: `no faults` or `mean compute per op`.
    pub ideal: String,
    /// The faults as the CLI flags that give them (empty: a measured run).
    pub injected: Vec<String>,
    pub baseline_iteration_time_ns: u64,
    pub iteration_time_ns: u64,
    /// S = iteration / baseline.
    pub slowdown: f64,
    /// Largest share first; ties in (by, name) order.
    pub blame: Vec<BlameSlice>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitivity: Vec<StageSensitivity>,
    /// Simulations the analysis ran.
    pub simulations: u32,
    /// Transient faults: each iteration's time as run, ns, the run going
    /// on until every window has ended and one iteration more (the steps
    /// above are then the means over these iterations); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iteration_times_ns: Vec<u64>,
}

struct Sim<'a> {
    config: SimConfig,
    cost: &'a dyn CollectiveCost,
    runs: u32,
    /// Transient faults: the run's length in iterations, the same for
    /// every slice (`None`: one iteration, the engine's).
    iterations: Option<u32>,
}

impl<'a> Sim<'a> {
    /// Summary-only runs under `config` (no timeline, no
    /// dependency edges: the numbers are the same).
    fn new(config: &SimConfig, cost: &'a dyn CollectiveCost) -> Sim<'a> {
        Sim {
            config: SimConfig {
                summary_only: true,
                record_dependencies: false,
                ..config.clone()
            },
            cost,
            runs: 0,
            iterations: None,
        }
    }

    /// The iterations of a run under `faults`, back to back, each starting
    /// when the previous one ended ([`Faults::for_iteration`]): `count` of
    /// them, or (`None`) until every window has ended and one more. An
    /// iteration no window reaches is the run without the windows
    /// (simulated once): nothing runs in a window before it opens.
    fn iteration_times(
        &mut self,
        job: &JobSpec,
        faults: &Faults,
        count: Option<u32>,
    ) -> Result<Vec<u64>, SimError> {
        let mut steady = faults.clone();
        steady.slow.retain(|s| s.window.is_none());
        let mut steady_ns: Option<u64> = None;
        let mut out: Vec<u64> = Vec::new();
        let mut start_ns = 0u64;
        for i in 0.. {
            if count.is_some_and(|k| i >= k) {
                break;
            }
            let local = faults.for_iteration(i, start_ns);
            let ended = !local.has_windows();
            if ended && count.is_none() && i > 0 {
                // One iteration after the last window, then stop.
                let t = match steady_ns {
                    Some(t) => t,
                    None => self.time_once(job, &steady)?,
                };
                out.push(t);
                break;
            }
            if i >= MAX_ITERATIONS {
                return Err(SimError::InvalidConfig {
                    name: "slow",
                    reason: format!(
                        "a window ends after more than {MAX_ITERATIONS} iterations of this run (the iterations take {}); give an earlier or shorter window",
                        crate::limits::number(out.last().copied().unwrap_or(0) as f64 / 1e9) + " s"
                    ),
                });
            }
            let steady_t = match steady_ns {
                Some(t) => t,
                None => {
                    let t = self.time_once(job, &steady)?;
                    steady_ns = Some(t);
                    t
                }
            };
            let reached = local.slow.iter().any(|s| match s.window {
                Some(Window::Time { onset_ns, .. }) => onset_ns < steady_t,
                Some(Window::Iterations { first, .. }) => first == 0,
                None => false,
            });
            let t = if reached {
                self.time_once(job, &local)?
            } else {
                steady_t
            };
            out.push(t);
            start_ns = start_ns.saturating_add(t);
        }
        Ok(out)
    }

    /// The slice of `job` under `faults`: its step and its share of the
    /// slow-down of a run of `run_ns` against an ideal of `ideal_ns`.
    fn slice(
        &mut self,
        (job, faults): (&JobSpec, &Faults),
        (by, name): (BlameBy, String),
        (run_ns, ideal_ns): (u64, u64),
    ) -> Result<BlameSlice, SimError> {
        let t = self.time(job, faults)?;
        Ok(BlameSlice {
            by,
            name,
            share: share(run_ns, t, ideal_ns, ratio(run_ns, ideal_ns)),
            iteration_time_ns: t,
        })
    }

    fn summary(&mut self, job: &JobSpec, faults: &Faults) -> Result<Summary, SimError> {
        let mut c = self.config.clone();
        c.faults = faults.clone();
        self.runs += 1;
        Ok(simulate_with(job, &c, self.cost)?.summary)
    }

    fn time_once(&mut self, job: &JobSpec, faults: &Faults) -> Result<u64, SimError> {
        Ok(self.summary(job, faults)?.iteration_time_ns)
    }

    /// The step under `faults`: one iteration's time, or with
    /// [`Sim::iterations`] the run's total over its iterations.
    fn time(&mut self, job: &JobSpec, faults: &Faults) -> Result<u64, SimError> {
        match self.iterations {
            None => self.time_once(job, faults),
            Some(k) => Ok(self
                .iteration_times(job, faults, Some(k))?
                .iter()
                .fold(0u64, |a, &t| a.saturating_add(t))),
        }
    }
}

fn placement(job: &JobSpec, config: &SimConfig) -> Placement {
    Placement::new(
        job.parallel,
        config.network.placement,
        config.network.gpus_per_node,
    )
}

fn share(run_ns: u64, slice_ns: u64, ideal_ns: u64, s: f64) -> f64 {
    if ideal_ns == 0 {
        return 0.0;
    }
    let x = (run_ns as f64 - slice_ns as f64) / ideal_ns as f64;
    x.clamp(0.0, (s - 1.0).max(0.0))
}

fn sort_blame(blame: &mut [BlameSlice]) {
    blame.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then(a.by.cmp(&b.by))
            .then(a.name.cmp(&b.name))
    });
}

/// `faults` with the compute slow-downs of every rank `drop` says removed
/// (a node scope becomes its ranks; a stage scope goes when `drop_stage`).
fn without_ranks(
    faults: &Faults,
    placement: &Placement,
    drop: &dyn Fn(u32) -> bool,
    drop_stage: &dyn Fn(u32) -> bool,
) -> Faults {
    let mut f = faults.clone();
    f.slow = faults
        .slow
        .iter()
        .filter_map(|s| {
            let ranks: Vec<u32> = match &s.scope {
                RankScope::Stage(st) => {
                    return (!drop_stage(*st)).then(|| s.clone());
                }
                RankScope::Ranks(r) => r.clone(),
                RankScope::Node(n) => placement.node_ranks(*n).collect(),
            };
            let kept: Vec<u32> = ranks.into_iter().filter(|r| !drop(*r)).collect();
            let mut s = s.clone();
            s.scope = RankScope::Ranks(kept);
            (!matches!(&s.scope, RankScope::Ranks(r) if r.is_empty())).then_some(s)
        })
        .collect();
    f
}

/// The ranks the compute faults name (a node's GPUs; a stage scope is not
/// expanded), ascending.
fn slowed_ranks(faults: &Faults, placement: &Placement) -> Vec<u32> {
    let mut out = Vec::new();
    for s in &faults.slow {
        match &s.scope {
            RankScope::Ranks(r) => out.extend(r.iter().copied()),
            RankScope::Node(n) => out.extend(placement.node_ranks(*n)),
            RankScope::Stage(_) => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The what-if of `config.faults` on `job`: the step with and without them
/// and the blame. `config.faults` must not be empty.
pub fn injected(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
) -> Result<WhatIfReport, SimError> {
    let faults = config.faults.clone();
    let pl = placement(job, config);
    let mut sim = Sim::new(config, cost);
    // Transient faults: the run's iterations as run fix its length for the
    // baseline and every slice; steps are totals over it until reported.
    let iteration_times_ns = if faults.has_windows() {
        let times = sim.iteration_times(job, &faults, None)?;
        sim.iterations = Some(times.len() as u32);
        times
    } else {
        Vec::new()
    };
    let k = iteration_times_ns.len().max(1) as u64;
    let run_ns = match sim.iterations {
        Some(_) => iteration_times_ns.iter().sum(),
        None => sim.time(job, &faults)?,
    };
    let base_ns = sim.time(job, &Faults::default())?;
    let s = ratio(run_ns, base_ns);
    let mut blame = Vec::new();
    let mut slice = |sim: &mut Sim<'_>, by: BlameBy, name: String, f: &Faults| {
        blame.push(sim.slice((job, f), (by, name), (run_ns, base_ns))?);
        Ok::<(), SimError>(())
    };
    let kinds = [
        (!faults.slow.is_empty(), "compute"),
        (!faults.slow_links.is_empty(), "network"),
        (faults.jitter.is_some(), "jitter"),
    ];
    if kinds.iter().filter(|k| k.0).count() > 1 {
        for (present, name) in kinds {
            if present {
                let mut f = faults.clone();
                match name {
                    "compute" => f.slow.clear(),
                    "network" => f.slow_links.clear(),
                    _ => f.jitter = None,
                }
                slice(&mut sim, BlameBy::Op, name.to_string(), &f)?;
            }
        }
    }
    let stage_of = |r: u32| pl.coords_of(r).pp;
    let ranks = slowed_ranks(&faults, &pl);
    let mut stages: Vec<u32> = ranks.iter().map(|&r| stage_of(r)).collect();
    stages.extend(faults.slow.iter().filter_map(|s| match s.scope {
        RankScope::Stage(st) => Some(st),
        _ => None,
    }));
    stages.sort_unstable();
    stages.dedup();
    if stages.len() > 1 || (stages.len() == 1 && kinds.iter().filter(|k| k.0).count() > 1) {
        for &st in &stages {
            let f = without_ranks(&faults, &pl, &|r| stage_of(r) == st, &|x| x == st);
            slice(&mut sim, BlameBy::Stage, format!("stage {st}"), &f)?;
        }
    }
    if job.mode == JobMode::PerRank && ranks.len() > 1 {
        for &r in ranks.iter().take(MAX_RANK_SLICES) {
            let f = without_ranks(&faults, &pl, &|x| x == r, &|_| false);
            slice(&mut sim, BlameBy::Rank, format!("rank {r}"), &f)?;
        }
        let mut groups: Vec<Vec<u32>> = ranks
            .iter()
            .map(|&r| pl.group_members(r, GroupKind::Dp))
            .collect();
        groups.sort();
        groups.dedup();
        if groups.len() > 1 {
            for g in groups.iter().take(MAX_RANK_SLICES) {
                let f = without_ranks(&faults, &pl, &|x| g.binary_search(&x).is_ok(), &|_| false);
                let name = format!(
                    "DP group {}",
                    crate::formats::lex::number_ranges(g).replace(", ", ",")
                );
                slice(&mut sim, BlameBy::Group, name, &f)?;
            }
        }
    }
    sort_blame(&mut blame);
    for b in &mut blame {
        b.iteration_time_ns /= k;
    }
    Ok(WhatIfReport {
        ideal: "no faults".to_string(),
        injected: faults.flags(),
        baseline_iteration_time_ns: base_ns / k,
        iteration_time_ns: run_ns / k,
        slowdown: s,
        blame,
        sensitivity: Vec::new(),
        simulations: sim.runs,
        iteration_times_ns,
    })
}

/// The stages of a `p`-stage pipeline to slow in turn: all of them, or
/// `max` evenly spaced with the first and the last (the sensitivity table,
/// the sweep's straggler).
pub fn sampled_stages(p: u32, max: usize) -> Vec<u32> {
    let p = p.max(1);
    if p as usize <= max || max < 2 {
        return (0..p).collect();
    }
    let n = max as u64;
    let mut v: Vec<u32> = (0..n)
        .map(|i| (i * u64::from(p - 1) / (n - 1)) as u32)
        .collect();
    v.dedup();
    v
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// Every stage's ranks slowed by `factor` in turn (at most
/// [`MAX_SENSITIVITY_STAGES`], evenly spaced), on top of `config.faults`:
/// what it costs the step against `config` as given, and where the other
/// ranks wait for it.
pub fn sensitivity(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
    factor: f64,
) -> Result<(u64, Vec<StageSensitivity>, u32), SimError> {
    crate::engine::faults::check_factor(factor).map_err(|reason| SimError::InvalidConfig {
        name: "sensitivity",
        reason,
    })?;
    let mut sim = Sim::new(config, cost);
    let base = sim.summary(job, &config.faults)?;
    let p = job.parallel.pp.max(1);
    let stages = sampled_stages(p, MAX_SENSITIVITY_STAGES);
    let waits = |s: &Summary| -> Vec<(String, u64)> {
        let mut w: Vec<(String, u64)> = GroupKind::ALL
            .iter()
            .map(|g| {
                let ns: u64 = s.stages.iter().map(|st| st.exposed_comm_ns.get(*g)).sum();
                (g.name().to_string(), ns)
            })
            .collect();
        w.push((
            "bubble".to_string(),
            s.stages.iter().map(|st| st.bubble_ns).sum(),
        ));
        w
    };
    let base_waits = waits(&base);
    let mut out = Vec::new();
    for st in stages {
        let mut f = config.faults.clone();
        f.slow.push(crate::engine::faults::SlowCompute {
            scope: RankScope::Stage(st),
            factor,
            window: None,
        });
        let s = sim.summary(job, &f)?;
        let mut carried = ("none".to_string(), 0i128);
        for ((name, ns), (_, b)) in waits(&s).into_iter().zip(&base_waits) {
            let grew = i128::from(ns) - i128::from(*b);
            if grew > carried.1 {
                carried = (name, grew);
            }
        }
        out.push(StageSensitivity {
            stage: st,
            factor,
            iteration_time_ns: s.iteration_time_ns,
            cost_percent: (ratio(s.iteration_time_ns, base.iteration_time_ns) - 1.0) * 100.0,
            carried_by: carried.0,
        });
    }
    Ok((base.iteration_time_ns, out, sim.runs))
}

/// Which compute pieces a measured slice puts back to the ideal.
#[derive(Clone, Copy)]
enum Piece {
    Layer(Phase),
    Rows,
}

/// `job` with the compute of the programs `progs` set to `ideal`'s for the
/// pieces `pieces` says.
fn mix(
    job: &JobSpec,
    ideal: &JobSpec,
    progs: &dyn Fn(usize) -> bool,
    pieces: &dyn Fn(Piece) -> bool,
) -> JobSpec {
    let mut j = job.clone();
    for (i, (p, q)) in j.programs.iter_mut().zip(&ideal.programs).enumerate() {
        if !progs(i) {
            continue;
        }
        for (b, bq) in p.blocks.iter_mut().zip(&q.blocks) {
            for (l, lq) in b.layers.iter_mut().zip(&bq.layers) {
                for ph in [Phase::Forward, Phase::InputGrad, Phase::WeightGrad] {
                    if pieces(Piece::Layer(ph)) {
                        phase_mut(l, ph).compute_ns = lq.phase(ph).compute_ns;
                    }
                }
            }
        }
        if pieces(Piece::Rows) {
            for (l, lq) in p
                .pre_rows
                .iter_mut()
                .zip(&q.pre_rows)
                .chain(p.post_rows.iter_mut().zip(&q.post_rows))
            {
                for ph in [Phase::Forward, Phase::InputGrad, Phase::WeightGrad] {
                    phase_mut(l, ph).compute_ns = lq.phase(ph).compute_ns;
                }
            }
        }
    }
    j
}

fn phase_mut(l: &mut LayerSpec, ph: Phase) -> &mut crate::engine::spec::PhaseOps {
    match ph {
        Phase::Forward => &mut l.forward,
        Phase::InputGrad => &mut l.input_grad,
        Phase::WeightGrad => &mut l.weight_grad,
    }
}

/// A per-rank replay with every compute piece at the mean of that piece
/// (same block, row and phase, same name) over the programs that have it.
pub fn ideal_job(job: &JobSpec) -> JobSpec {
    use std::collections::BTreeMap;
    // (where, name) -> (sum, count) per phase.
    type Key = (u8, usize, usize, String);
    let mut sums: BTreeMap<Key, [(u128, u64); 3]> = BTreeMap::new();
    let phases = [Phase::Forward, Phase::InputGrad, Phase::WeightGrad];
    let visit = |job: &JobSpec, f: &mut dyn FnMut(Key, &LayerSpec)| {
        for p in &job.programs {
            for (bi, b) in p.blocks.iter().enumerate() {
                for (li, l) in b.layers.iter().enumerate() {
                    f((0, bi, li, l.name.clone()), l);
                }
            }
            for (li, l) in p.pre_rows.iter().enumerate() {
                f((1, 0, li, l.name.clone()), l);
            }
            for (li, l) in p.post_rows.iter().enumerate() {
                f((2, 0, li, l.name.clone()), l);
            }
        }
    };
    visit(job, &mut |k, l| {
        let e = sums.entry(k).or_insert([(0, 0); 3]);
        for (i, ph) in phases.iter().enumerate() {
            e[i].0 += u128::from(l.phase(*ph).compute_ns);
            e[i].1 += 1;
        }
    });
    let mean = |k: &Key, i: usize| -> Option<u64> {
        sums.get(k)
            .map(|e| (e[i].0 / u128::from(e[i].1.max(1))) as u64)
    };
    let mut j = job.clone();
    for p in &mut j.programs {
        for (bi, b) in p.blocks.iter_mut().enumerate() {
            for (li, l) in b.layers.iter_mut().enumerate() {
                let k = (0, bi, li, l.name.clone());
                for (i, ph) in phases.iter().enumerate() {
                    if let Some(m) = mean(&k, i) {
                        phase_mut(l, *ph).compute_ns = m;
                    }
                }
            }
        }
        for (tag, rows) in [(1u8, &mut p.pre_rows), (2u8, &mut p.post_rows)] {
            for (li, l) in rows.iter_mut().enumerate() {
                let k = (tag, 0, li, l.name.clone());
                for (i, ph) in phases.iter().enumerate() {
                    if let Some(m) = mean(&k, i) {
                        phase_mut(l, *ph).compute_ns = m;
                    }
                }
            }
        }
    }
    j
}

/// The blame of a measured per-rank replay: S against every compute piece
/// at its mean over the ranks ([`ideal_job`]), split by rank (the
/// [`MAX_RANK_SLICES`] ranks with the most compute above the ideal),
/// stage, data-parallel group and op kind. `config.faults` stay applied to
/// both runs. Refuses SPMD jobs (one program stands for many ranks: there
/// is nothing to compare a rank with).
pub fn measured(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
) -> Result<WhatIfReport, SimError> {
    if job.mode != JobMode::PerRank {
        return Err(SimError::InvalidConfig {
            name: "blame",
            reason: "a blame against the ranks' mean needs a per-rank replay (Kineto, Echo or Chakra traces); this job simulates one rank per stage for all of its ranks".to_string(),
        });
    }
    let pl = placement(job, config);
    let ideal = ideal_job(job);
    let mut sim = Sim::new(config, cost);
    let faults = config.faults.clone();
    let run_ns = sim.time(job, &faults)?;
    let ideal_ns = sim.time(&ideal, &faults)?;
    let s = ratio(run_ns, ideal_ns);
    let ranks: Vec<u32> = job.programs.iter().map(|p| p.rank).collect();
    let all = |_: Piece| true;
    let mut blame = Vec::new();
    let mut slice = |sim: &mut Sim<'_>, by: BlameBy, name: String, j: JobSpec| {
        blame.push(sim.slice((&j, &faults), (by, name), (run_ns, ideal_ns))?);
        Ok::<(), SimError>(())
    };
    // Ranks, most excess compute first.
    let excess = |i: usize| -> i128 {
        let total = |p: &crate::engine::spec::RankProgram| -> i128 {
            p.blocks
                .iter()
                .flat_map(|b| b.layers.iter())
                .chain(p.pre_rows.iter())
                .chain(p.post_rows.iter())
                .map(|l| {
                    i128::from(l.forward.compute_ns)
                        + i128::from(l.input_grad.compute_ns)
                        + i128::from(l.weight_grad.compute_ns)
                })
                .sum()
        };
        total(&job.programs[i]) - total(&ideal.programs[i])
    };
    let mut order: Vec<usize> = (0..job.programs.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(excess(i)), ranks[i]));
    for &i in order.iter().take(MAX_RANK_SLICES) {
        let j = mix(job, &ideal, &|x| x == i, &all);
        slice(&mut sim, BlameBy::Rank, format!("rank {}", ranks[i]), j)?;
    }
    let mut stages: Vec<u32> = job.programs.iter().map(|p| p.stage).collect();
    stages.sort_unstable();
    stages.dedup();
    if stages.len() > 1 {
        for st in stages {
            let j = mix(job, &ideal, &|x| job.programs[x].stage == st, &all);
            slice(&mut sim, BlameBy::Stage, format!("stage {st}"), j)?;
        }
    }
    let mut groups: Vec<Vec<u32>> = ranks
        .iter()
        .map(|&r| {
            pl.group_members(r, GroupKind::Dp)
                .into_iter()
                .filter(|m| ranks.contains(m))
                .collect()
        })
        .collect();
    groups.sort();
    groups.dedup();
    if groups.len() > 1 {
        for g in groups.iter().take(MAX_RANK_SLICES) {
            let j = mix(job, &ideal, &|x| g.contains(&ranks[x]), &all);
            let name = format!(
                "DP group {}",
                crate::formats::lex::number_ranges(g).replace(", ", ",")
            );
            slice(&mut sim, BlameBy::Group, name, j)?;
        }
    }
    let ops: [(&str, Piece); 4] = [
        ("forward", Piece::Layer(Phase::Forward)),
        ("input gradient", Piece::Layer(Phase::InputGrad)),
        ("weight gradient", Piece::Layer(Phase::WeightGrad)),
        ("once per iteration (optimizer, loss)", Piece::Rows),
    ];
    for (name, piece) in ops {
        let same = |a: Piece, b: Piece| match (a, b) {
            (Piece::Rows, Piece::Rows) => true,
            (Piece::Layer(x), Piece::Layer(y)) => x == y,
            _ => false,
        };
        let j = mix(job, &ideal, &|_| true, &|p| same(p, piece));
        if j != *job {
            slice(&mut sim, BlameBy::Op, name.to_string(), j)?;
        }
    }
    sort_blame(&mut blame);
    Ok(WhatIfReport {
        ideal: "mean compute per op".to_string(),
        injected: faults.flags(),
        baseline_iteration_time_ns: ideal_ns,
        iteration_time_ns: run_ns,
        slowdown: s,
        blame,
        sensitivity: Vec::new(),
        simulations: sim.runs,
        iteration_times_ns: Vec::new(),
    })
}

/// The what-if report of one run: a measured per-rank replay with `blame`
/// gets [`measured`] (with any injected faults in both runs); otherwise
/// injected faults get [`injected`], and `blame` adds the [`sensitivity`]
/// table with each stage slowed by its factor. `None`: neither.
pub fn report(
    job: &JobSpec,
    config: &SimConfig,
    cost: &dyn CollectiveCost,
    blame: Option<f64>,
) -> Result<Option<WhatIfReport>, SimError> {
    if blame.is_some() && job.mode == JobMode::PerRank {
        return measured(job, config, cost).map(Some);
    }
    let mut out = if config.faults.is_empty() {
        None
    } else {
        Some(injected(job, config, cost)?)
    };
    if let Some(factor) = blame {
        let (base_ns, table, runs) = sensitivity(job, config, cost, factor)?;
        let r = out.get_or_insert_with(|| WhatIfReport {
            ideal: "as given".to_string(),
            injected: Vec::new(),
            baseline_iteration_time_ns: base_ns,
            iteration_time_ns: base_ns,
            slowdown: 1.0,
            blame: Vec::new(),
            sensitivity: Vec::new(),
            simulations: 0,
            iteration_times_ns: Vec::new(),
        });
        r.sensitivity = table;
        r.simulations += runs;
    }
    Ok(out)
}
