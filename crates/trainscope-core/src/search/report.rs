//! Rows, the Pareto front, the ranking, shards and their merge, and the
//! one-line explanation of the winner.
//!
//! [`SweepReport`] is what `trainscope sweep --json` prints and what
//! `--merge` reads back: the outcomes of the candidates of one sweep (or of
//! one shard), rows sorted by (fits first, iteration time, peak memory,
//! enumeration index). [`build`] makes it from [`Outcome`]s; [`merge`]
//! joins shards of the same sweep into exactly the report an unsharded
//! run builds (the same rows, counts, front and explanation).

use super::{counts_of, evaluate, precheck, Candidate, ReasonCountMap};
use crate::engine::summary::ExposedComm;
use crate::engine::SimConfig;
use crate::job::memory::gib;
use crate::job::sharding::Offload;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many configurations failed for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    pub reason: String,
    pub count: u64,
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

fn is_no_offload(o: &Offload) -> bool {
    *o == Offload::None
}

/// One simulated configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Position in the enumeration.
    pub index: u32,
    /// `trainscope simulate --model` flags that reproduce this row.
    pub flags: String,
    pub world: u32,
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    /// Context-parallel size (absent in JSON when 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub cp: u32,
    pub ep: u32,
    /// Expert tensor-parallel size when other than TP (absent in JSON:
    /// TP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_tp: Option<u32>,
    pub vpp: u32,
    /// Layers of the first and the last stage when PP does not divide the
    /// layers ([`super::uneven_split`]); absent: an even split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_stage_layers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_stage_layers: Option<u32>,
    /// The embedding / the loss counted as a layer in the pipeline split
    /// (absent in JSON: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub account_for_embedding: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub account_for_loss: bool,
    pub micro_batch_size: u32,
    pub micro_batches: u32,
    pub recompute: String,
    pub schedule: String,
    pub sequence_parallel: bool,
    pub distributed_optimizer: bool,
    /// The ZeRO stage (1: the distributed optimizer; absent in older
    /// rows: 0).
    #[serde(default)]
    pub zero: u8,
    /// HSDP's shard group (`--hsdp-shard`; 0 and absent: none).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub hsdp_shard: u32,
    /// What lives in host memory (`--offload`: `optimizer`,
    /// `optimizer+params`; `none`, and absent in older rows: nothing).
    #[serde(default, skip_serializing_if = "is_no_offload")]
    pub offload: Offload,
    /// The software-stack flags of the row (`--cuda-graphs layers
    /// --moe-token-dispatcher flex`; empty: the defaults; absent in JSON
    /// when empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub software: String,
    pub iteration_time_ns: u64,
    pub tokens_per_second: f64,
    pub mfu: f64,
    /// The largest stage peak.
    pub peak_bytes: u64,
    pub peak_bytes_per_stage: Vec<u64>,
    pub capacity_bytes: u64,
    pub fits: bool,
    /// The reference rank's bubble, ns.
    pub bubble_ns: u64,
    /// The reference rank's exposed communication per group, ns.
    pub exposed_comm_ns: ExposedComm,
    /// `sweep --straggler`: the step with one GPU slowed at its worst
    /// place ([`super::worst_straggler`]), ns; rows are ranked by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub straggler_iteration_time_ns: Option<u64>,
    /// The stage whose slow GPU costs the most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub straggler_stage: Option<u32>,
    /// `sweep --rank-by time-to-train`: days to train the run's tokens
    /// with failures, checkpoints and restarts (the goodput planner's
    /// closed form, [`super::time_to_train`]); rows are ranked by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days_to_train: Option<f64>,
    /// On the Pareto front of (iteration time, peak memory) among the
    /// rows that fit.
    pub pareto: bool,
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Pruned by the memory check before simulating.
    Pruned(&'static str),
    /// The simulation refused it.
    Failed(String),
    Simulated(Box<Row>),
}

/// Precheck, then simulate: what [`build`] collects for one candidate.
pub fn process(
    c: &Candidate,
    config: &SimConfig,
    common_flags: &str,
    straggler: Option<f64>,
) -> Outcome {
    if let Err(why) = precheck(c) {
        return Outcome::Pruned(why);
    }
    match evaluate(c, config, common_flags, straggler) {
        Ok(r) => Outcome::Simulated(Box::new(r)),
        Err(e) => Outcome::Failed(e),
    }
}

/// Which slice of a sharded sweep a report holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardId {
    pub index: u32,
    pub count: u32,
}

/// The result of a sweep or of one shard of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// The sweep's inputs ([`super::SweepSpec::describe`]).
    pub sweep: String,
    /// `None`: the whole sweep.
    pub shard: Option<ShardId>,
    /// Valid candidates this report covers.
    pub candidates: u64,
    /// Combinations the enumeration refused (the whole sweep's, the same
    /// in every shard).
    pub skipped: u64,
    pub skipped_reasons: Vec<ReasonCount>,
    /// Candidates pruned by the memory check before simulating.
    pub pruned: u64,
    pub pruned_reasons: Vec<ReasonCount>,
    /// Candidates simulated (rows).
    pub simulated: u64,
    /// Candidates the simulation refused.
    pub failed: u64,
    pub failed_reasons: Vec<ReasonCount>,
    /// Rows that fit in memory.
    pub fitting: u64,
    /// Every row, sorted: fits first, then iteration time, peak memory,
    /// enumeration index.
    pub results: Vec<Row>,
    /// Why the fastest fitting row beats the runner-up.
    pub explain: Option<String>,
}

/// Mark the Pareto front of (iteration time, peak bytes) among the rows
/// that fit: a row is on it when no fitting row is at least as good in both
/// and better in one. Rows that do not fit are off it.
pub fn pareto(rows: &mut [Row]) {
    let mut order: Vec<usize> = (0..rows.len()).filter(|i| rows[*i].fits).collect();
    order.sort_by_key(|&i| (rows[i].iteration_time_ns, rows[i].peak_bytes, rows[i].index));
    for r in rows.iter_mut() {
        r.pareto = false;
    }
    // The smallest peak among rows strictly faster than the current group.
    let mut best_before = u64::MAX;
    let mut g = 0;
    while g < order.len() {
        let t = rows[order[g]].iteration_time_ns;
        let mut end = g;
        while end < order.len() && rows[order[end]].iteration_time_ns == t {
            end += 1;
        }
        // Sorted by peak inside the group: the group's minimum is first.
        let group_min = rows[order[g]].peak_bytes;
        if group_min < best_before {
            for &i in &order[g..end] {
                if rows[i].peak_bytes == group_min {
                    rows[i].pareto = true;
                }
            }
        }
        best_before = best_before.min(group_min);
        g = end;
    }
}

impl Row {
    /// What rows are ranked by: the step with a straggler when the sweep
    /// has one (`--straggler`), else the step.
    pub fn ranking_time_ns(&self) -> u64 {
        self.straggler_iteration_time_ns
            .unwrap_or(self.iteration_time_ns)
    }
}

fn sort_rows(rows: &mut [Row]) {
    // Days to train first where the sweep has them (all rows or none).
    let days = |r: &Row| r.days_to_train.unwrap_or(0.0);
    rows.sort_by(|a, b| {
        (!a.fits)
            .cmp(&!b.fits)
            .then(days(a).total_cmp(&days(b)))
            .then_with(|| {
                (a.ranking_time_ns(), a.peak_bytes, a.index).cmp(&(
                    b.ranking_time_ns(),
                    b.peak_bytes,
                    b.index,
                ))
            })
    });
}

/// Put `rows` in the report's order (fits first, then iteration time, peak
/// memory, enumeration index) and mark their Pareto front: what a report
/// does to its rows, for a front end showing a sweep's rows as they arrive
/// (the same rows ranked give the same order and front as the report).
pub fn rank(rows: &mut [Row]) {
    sort_rows(rows);
    pareto(rows);
}

fn add(map: &mut ReasonCountMap, reasons: &[ReasonCount]) {
    for r in reasons {
        *map.entry(r.reason.clone()).or_insert(0) += r.count;
    }
}

/// The report of `outcomes` (one per candidate of the sweep or shard).
pub fn build(
    sweep: String,
    shard: Option<ShardId>,
    skipped: u64,
    skipped_reasons: Vec<ReasonCount>,
    outcomes: Vec<Outcome>,
) -> SweepReport {
    let candidates = outcomes.len() as u64;
    let mut pruned: ReasonCountMap = BTreeMap::new();
    let mut failed: ReasonCountMap = BTreeMap::new();
    let mut rows = Vec::new();
    for o in outcomes {
        match o {
            Outcome::Pruned(why) => *pruned.entry(why.to_string()).or_insert(0) += 1,
            Outcome::Failed(why) => *failed.entry(super::reason_key(&why)).or_insert(0) += 1,
            Outcome::Simulated(r) => rows.push(*r),
        }
    }
    finish(SweepReport {
        sweep,
        shard,
        candidates,
        skipped,
        skipped_reasons,
        pruned: pruned.values().sum(),
        pruned_reasons: counts_of(pruned),
        simulated: 0,
        failed: failed.values().sum(),
        failed_reasons: counts_of(failed),
        fitting: 0,
        results: rows,
        explain: None,
    })
}

/// Sort, mark the front, count, explain.
pub(crate) fn finish(mut r: SweepReport) -> SweepReport {
    rank(&mut r.results);
    r.simulated = r.results.len() as u64;
    r.fitting = r.results.iter().filter(|x| x.fits).count() as u64;
    let fitting: Vec<&Row> = r.results.iter().filter(|x| x.fits).collect();
    r.explain = match fitting.as_slice() {
        [best, second, ..] => Some(explain(best, second)),
        [best] => Some(format!(
            "{} is the only configuration that fits",
            summary(best)
        )),
        [] => None,
    };
    r
}

/// Why merging shards failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("no shard outputs to merge")]
    Empty,
    #[error("output {index} is not a shard (it has no `shard` field): merge the outputs of `sweep --shard I/N`")]
    NotAShard { index: usize },
    #[error("output {index} is of another sweep: `{theirs}` differs from `{ours}`")]
    OtherSweep {
        index: usize,
        ours: String,
        theirs: String,
    },
    #[error("output {index} is shard {shard} of {count}, the first is of {expected}")]
    OtherCount {
        index: usize,
        shard: u32,
        count: u32,
        expected: u32,
    },
    #[error("shard {shard} of {count} is given twice")]
    Duplicate { shard: u32, count: u32 },
    #[error("shards missing: {missing:?} of {count}")]
    Missing { missing: Vec<u32>, count: u32 },
}

/// Join the shards of one sweep (all of them, each once, in any order):
/// the report an unsharded run gives.
pub fn merge(shards: &[SweepReport]) -> Result<SweepReport, MergeError> {
    let first = shards.first().ok_or(MergeError::Empty)?;
    let count = first.shard.ok_or(MergeError::NotAShard { index: 0 })?.count;
    let mut seen = vec![false; count as usize];
    let mut skipped_pruned: ReasonCountMap = BTreeMap::new();
    let mut failed: ReasonCountMap = BTreeMap::new();
    let mut rows = Vec::new();
    let mut candidates = 0;
    for (i, s) in shards.iter().enumerate() {
        let id = s.shard.ok_or(MergeError::NotAShard { index: i })?;
        if s.sweep != first.sweep || s.skipped_reasons != first.skipped_reasons {
            return Err(MergeError::OtherSweep {
                index: i,
                ours: first.sweep.clone(),
                theirs: s.sweep.clone(),
            });
        }
        if id.count != count || id.index >= count {
            return Err(MergeError::OtherCount {
                index: i,
                shard: id.index,
                count: id.count,
                expected: count,
            });
        }
        if std::mem::replace(&mut seen[id.index as usize], true) {
            return Err(MergeError::Duplicate {
                shard: id.index,
                count,
            });
        }
        candidates += s.candidates;
        add(&mut skipped_pruned, &s.pruned_reasons);
        add(&mut failed, &s.failed_reasons);
        rows.extend(s.results.iter().cloned());
    }
    let missing: Vec<u32> = (0..count).filter(|k| !seen[*k as usize]).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing, count });
    }
    Ok(finish(SweepReport {
        sweep: first.sweep.clone(),
        shard: None,
        candidates,
        skipped: first.skipped,
        skipped_reasons: first.skipped_reasons.clone(),
        pruned: skipped_pruned.values().sum(),
        pruned_reasons: counts_of(skipped_pruned),
        simulated: 0,
        failed: failed.values().sum(),
        failed_reasons: counts_of(failed),
        fitting: 0,
        results: rows,
        explain: None,
    }))
}

/// A time as the sweep writes it, in milliseconds (`85926.0 ms`): the one
/// unit of its "why" lines, so the page's table of the same rows uses it too.
pub fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// A row's layout in one phrase ("TP 8 PP 4 DP 32 1f1b mbs 1 recompute
/// selective", "... ZeRO-3 HSDP 4").
pub fn summary(r: &Row) -> String {
    let mut s = format!("TP {} PP {} DP {}", r.tp, r.pp, r.dp);
    if r.cp > 1 {
        s.push_str(&format!(" CP {}", r.cp));
    }
    if r.ep > 1 {
        s.push_str(&format!(" EP {}", r.ep));
    }
    if let Some(e) = r.expert_tp {
        s.push_str(&format!(" expert TP {e}"));
    }
    if r.account_for_embedding || r.account_for_loss {
        s.push_str(" (embedding/loss in split)");
    }
    s.push_str(&format!(" {}", r.schedule));
    if r.vpp > 1 {
        s.push_str(&format!(" vpp {}", r.vpp));
    }
    s.push_str(&format!(
        " mbs {} recompute {}",
        r.micro_batch_size, r.recompute
    ));
    // ZeRO-2 and 3 (1, the distributed optimizer, is the default), HSDP.
    if r.zero >= 2 {
        s.push_str(&format!(" ZeRO-{}", r.zero));
    }
    if r.hsdp_shard > 0 {
        s.push_str(&format!(" HSDP {}", r.hsdp_shard));
    }
    if !is_no_offload(&r.offload) {
        s.push_str(&format!(" offload {}", r.offload.name()));
    }
    s
}

/// How a quantity moved from the runner-up to the winner, in words
/// ("halves", "-23%", "x2.1").
fn change(from: u64, to: u64) -> String {
    if from == to {
        return "unchanged".to_string();
    }
    if from == 0 {
        return "new".to_string();
    }
    let ratio = to as f64 / from as f64;
    if (0.45..=0.55).contains(&ratio) {
        "halves".to_string()
    } else if ratio < 1.0 {
        format!("-{:.1}%", (1.0 - ratio) * 100.0)
    } else {
        format!("+{:.1}%", (ratio - 1.0) * 100.0)
    }
}

/// One line: why `best` beats `second` — the settings that differ (runner-up
/// -> winner), the step with one GPU slowed when the sweep ranks by it
/// (`--straggler`, with its worst stage), the step, then the time
/// components that moved most (bubble, exposed communication per group),
/// and the memory price.
pub fn explain(best: &Row, second: &Row) -> String {
    let mut diffs = Vec::new();
    let mut d = |name: &str, a: String, b: String| {
        if a != b {
            diffs.push(format!("{name} {a} -> {b}"));
        }
    };
    d("world", second.world.to_string(), best.world.to_string());
    d("TP", second.tp.to_string(), best.tp.to_string());
    d("PP", second.pp.to_string(), best.pp.to_string());
    d("DP", second.dp.to_string(), best.dp.to_string());
    d("CP", second.cp.to_string(), best.cp.to_string());
    d("EP", second.ep.to_string(), best.ep.to_string());
    // Expert TP is a setting of its own only where a row sets it apart
    // from TP (else it follows TP, whose change is named already).
    if best.expert_tp.is_some() || second.expert_tp.is_some() {
        let etp = |r: &Row| r.expert_tp.unwrap_or(r.tp).to_string();
        d("expert TP", etp(second), etp(best));
    }
    d("schedule", second.schedule.clone(), best.schedule.clone());
    d("vpp", second.vpp.to_string(), best.vpp.to_string());
    d(
        "micro-batch",
        second.micro_batch_size.to_string(),
        best.micro_batch_size.to_string(),
    );
    d(
        "recompute",
        second.recompute.clone(),
        best.recompute.clone(),
    );
    d(
        "sequence parallel",
        second.sequence_parallel.to_string(),
        best.sequence_parallel.to_string(),
    );
    d(
        "distributed optimizer",
        second.distributed_optimizer.to_string(),
        best.distributed_optimizer.to_string(),
    );
    let software = |r: &Row| {
        if r.software.is_empty() {
            "defaults".to_string()
        } else {
            format!("`{}`", r.software)
        }
    };
    d("software", software(second), software(best));
    let settings = if diffs.is_empty() {
        "same settings".to_string()
    } else {
        diffs.join(", ")
    };
    // Time components, the largest moves first.
    let groups = [
        ("bubble", second.bubble_ns, best.bubble_ns),
        (
            "exposed TP comm",
            second.exposed_comm_ns.tp,
            best.exposed_comm_ns.tp,
        ),
        (
            "exposed DP comm",
            second.exposed_comm_ns.dp + second.exposed_comm_ns.dp_ep,
            best.exposed_comm_ns.dp + best.exposed_comm_ns.dp_ep,
        ),
        (
            "exposed PP comm",
            second.exposed_comm_ns.pp,
            best.exposed_comm_ns.pp,
        ),
        (
            "exposed EP comm",
            second.exposed_comm_ns.ep,
            best.exposed_comm_ns.ep,
        ),
    ];
    let mut moves: Vec<(u64, String)> = groups
        .iter()
        .filter(|(_, a, b)| a != b)
        .map(|(name, a, b)| {
            (
                a.abs_diff(*b),
                format!("{name} {} -> {} ({})", ms(*a), ms(*b), change(*a, *b)),
            )
        })
        .collect();
    moves.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
    let step = format!(
        "iteration {} -> {} ({})",
        ms(second.iteration_time_ns),
        ms(best.iteration_time_ns),
        change(second.iteration_time_ns, best.iteration_time_ns)
    );
    // `--straggler`: what the rows rank by comes first, with the stage
    // whose slow GPU costs each row most.
    let mut parts = match (
        (second.straggler_iteration_time_ns, second.straggler_stage),
        (best.straggler_iteration_time_ns, best.straggler_stage),
    ) {
        ((Some(a), Some(sa)), (Some(b), Some(sb))) => {
            let stage = if sa == sb {
                format!("stage {sb}")
            } else {
                format!("stage {sa} -> {sb}")
            };
            vec![
                format!(
                    "{settings}: with one GPU slowed {} -> {} ({}; worst at {stage})",
                    ms(a),
                    ms(b),
                    change(a, b)
                ),
                step,
            ]
        }
        _ => vec![format!("{settings}: {step}")],
    };
    parts.extend(moves.into_iter().take(2).map(|m| m.1));
    parts.push(format!(
        "peak memory {} -> {} of {}",
        gib(second.peak_bytes),
        gib(best.peak_bytes),
        gib(best.capacity_bytes)
    ));
    parts.join("; ")
}
