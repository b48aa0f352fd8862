//! Analysis of a measured run with timed GPU work (PyTorch profiler traces):
//! per rank, over the run's iteration, the temporal breakdown (compute,
//! communication, their overlap, idle) in the sense of HolisticTraceAnalysis's
//! temporal and communication-computation overlap breakdowns (facts only:
//! time with a compute kernel running, time with a communication kernel
//! running, both, neither), the kernels that take most time, and the
//! straggler: the rank whose compute is longest, and per collective which
//! rank arrived last and how long the others waited for it.
//!
//! Definitions (integer ns, on the run's shared clock):
//! - compute: the union of the rank's compute kernels, copies and sets;
//!   communication: the union of its NCCL kernels;
//! - overlap = |compute ∩ communication|; exposed communication =
//!   communication − overlap; idle = iteration span − |compute ∪
//!   communication| (the span is the rank's step, start to end);
//! - collectives are matched across ranks as the k-th collective of the
//!   same kind and process group on each member; the last rank to start
//!   arrived last; a member's wait is the last start minus its own start;
//!   the transfer part is the earliest end minus the last start.

use crate::workload::{MeasuredOp, MeasuredRun, OpKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The time breakdown of one rank's iteration, ns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankBreakdown {
    pub rank: u32,
    pub iteration_ns: u64,
    pub compute_ns: u64,
    pub communication_ns: u64,
    pub overlap_ns: u64,
    pub exposed_communication_ns: u64,
    pub idle_ns: u64,
    /// Sum of compute kernel durations (streams may run concurrently, so
    /// it can exceed `compute_ns`).
    pub compute_kernel_sum_ns: u64,
}

/// A kernel name's total over the ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelTotal {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
}

/// One collective matched across ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveArrival {
    /// 0-based occurrence of this kind and group on each member.
    pub index: u32,
    pub name: String,
    pub message_bytes: Option<u64>,
    /// The process group as the trace names it.
    pub group: Option<String>,
    /// Ranks of the set that ran it.
    pub ranks: u32,
    /// The rank that started last.
    pub last_rank: u32,
    /// The longest wait of another member for it, ns.
    pub max_wait_ns: u64,
    /// Earliest end minus last start, ns (0 when they do not overlap).
    pub transfer_ns: u64,
}

/// The analysis of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Analysis {
    /// The `ProfilerStep` (or iteration index) analysed.
    pub iteration: Option<u32>,
    pub ranks: Vec<RankBreakdown>,
    /// Top kernels by total time over all ranks, longest first.
    pub top_kernels: Vec<KernelTotal>,
    /// The rank with the longest compute, and by how much it exceeds the
    /// (lower) median compute of the other ranks, ns.
    pub compute_straggler: Option<u32>,
    pub straggler_excess_ns: u64,
    /// Collectives matched across ranks, in order.
    pub collectives: Vec<CollectiveArrival>,
    /// Per rank: how many collectives it arrived at last (ties: not counted).
    pub last_arrivals: Vec<(u32, u32)>,
    /// Ranks of the set and of the job, and what that means.
    pub notes: Vec<String>,
}

/// Merge intervals (sorted by start) and return them disjoint.
fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn length(v: &[(u64, u64)]) -> u64 {
    v.iter().map(|(s, e)| e - s).sum()
}

/// Length of the intersection of two disjoint sorted interval lists.
fn intersection(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            total += e - s;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

fn is_comm(op: &MeasuredOp) -> bool {
    matches!(
        op.kind,
        OpKind::Collective { .. } | OpKind::Send | OpKind::Recv
    )
}

fn interval(op: &MeasuredOp) -> Option<(u64, u64)> {
    Some((op.start_ns?, op.end_ns()?))
}

/// How many kernels [`analyse`] lists unless told otherwise (`trainscope
/// analyze --top`, the page, `simulate`'s analysis of a Kineto run).
pub const DEFAULT_TOP_KERNELS: usize = 10;

/// Analyse `run` (its ranks' ops over their first iteration span); `top`
/// kernels are listed.
pub fn analyse(run: &MeasuredRun, top: usize) -> Analysis {
    let mut ranks = Vec::new();
    let mut kernels: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for rt in &run.ranks {
        let span = rt.iterations.first().map_or_else(
            || {
                let s = rt.ops.iter().filter_map(|o| o.start_ns).min().unwrap_or(0);
                let e = rt
                    .ops
                    .iter()
                    .filter_map(MeasuredOp::end_ns)
                    .max()
                    .unwrap_or(s);
                (s, e)
            },
            |sp| (sp.start_ns, sp.end_ns),
        );
        let mut compute = Vec::new();
        let mut comm = Vec::new();
        let mut kernel_sum = 0u64;
        for op in &rt.ops {
            let Some((s, e)) = interval(op) else {
                continue;
            };
            let (s, e) = (s.max(span.0), e.min(span.1));
            if e <= s {
                continue;
            }
            if is_comm(op) {
                comm.push((s, e));
            } else {
                compute.push((s, e));
                kernel_sum += e - s;
                let k = kernels.entry(op.name.as_str()).or_default();
                k.0 += 1;
                k.1 += e - s;
            }
        }
        let compute = union(compute);
        let comm = union(comm);
        let (c, m) = (length(&compute), length(&comm));
        let overlap = intersection(&compute, &comm);
        let busy = c + m - overlap;
        let iteration = span.1.saturating_sub(span.0);
        ranks.push(RankBreakdown {
            rank: rt.rank,
            iteration_ns: iteration,
            compute_ns: c,
            communication_ns: m,
            overlap_ns: overlap,
            exposed_communication_ns: m - overlap,
            idle_ns: iteration.saturating_sub(busy),
            compute_kernel_sum_ns: kernel_sum,
        });
    }
    let mut top_kernels: Vec<KernelTotal> = kernels
        .into_iter()
        .map(|(name, (count, total_ns))| KernelTotal {
            name: name.to_string(),
            count,
            total_ns,
        })
        .collect();
    top_kernels.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    top_kernels.truncate(top);

    // Straggler by compute: the longest compute (lowest rank on ties).
    let straggler = ranks
        .iter()
        .max_by(|a, b| a.compute_ns.cmp(&b.compute_ns).then(b.rank.cmp(&a.rank)))
        .map(|s| (s.rank, s.compute_ns));
    // Its excess over the (lower) median of the other ranks.
    let mut others: Vec<u64> = ranks
        .iter()
        .filter(|r| Some(r.rank) != straggler.map(|(s, _)| s))
        .map(|r| r.compute_ns)
        .collect();
    others.sort_unstable();
    let median = others
        .get(others.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    let straggler_excess_ns = match straggler {
        Some((_, c)) if !others.is_empty() => c.saturating_sub(median),
        _ => 0,
    };

    // Collectives matched across ranks: k-th of (name, group) per rank.
    type Key = (String, Option<String>, u32);
    let mut occ: BTreeMap<Key, Vec<(u32, &MeasuredOp)>> = BTreeMap::new();
    let mut order: Vec<Key> = Vec::new();
    for rt in &run.ranks {
        let mut seen: BTreeMap<(String, Option<String>), u32> = BTreeMap::new();
        for op in rt.ops.iter().filter(|o| is_comm(o)) {
            let base = (kind_key(op), op.detail.clone());
            let k = seen.entry(base.clone()).or_default();
            let key = (base.0, base.1, *k);
            *k += 1;
            if !occ.contains_key(&key) {
                order.push(key.clone());
            }
            occ.entry(key).or_default().push((rt.rank, op));
        }
    }
    let mut collectives = Vec::new();
    let mut last_count: BTreeMap<u32, u32> = BTreeMap::new();
    for key in order {
        let members = occ.remove(&key).unwrap_or_default();
        let timed: Vec<(u32, u64, u64)> = members
            .iter()
            .filter_map(|(r, o)| interval(o).map(|(s, e)| (*r, s, e)))
            .collect();
        if timed.len() < 2 {
            continue;
        }
        let last_start = timed.iter().map(|t| t.1).max().unwrap_or(0);
        let first_start = timed.iter().map(|t| t.1).min().unwrap_or(0);
        let earliest_end = timed.iter().map(|t| t.2).min().unwrap_or(0);
        let lasts: Vec<u32> = timed
            .iter()
            .filter(|t| t.1 == last_start)
            .map(|t| t.0)
            .collect();
        let last_rank = lasts[0];
        if lasts.len() == 1 && last_start > first_start {
            *last_count.entry(last_rank).or_default() += 1;
        }
        let op = members[0].1;
        collectives.push(CollectiveArrival {
            index: key.2,
            name: op.name.clone(),
            message_bytes: op.message_bytes,
            group: key.1.clone(),
            ranks: u32::try_from(timed.len()).unwrap_or(u32::MAX),
            last_rank,
            max_wait_ns: last_start - first_start,
            transfer_ns: earliest_end.saturating_sub(last_start),
        });
    }
    let mut notes = Vec::new();
    let world = run.parallel.world;
    if (run.ranks.len() as u64) < u64::from(world) {
        notes.push(format!(
            "the set holds {} of {world} ranks: the breakdown and the straggler are of those ranks only; a collective's last arrival may be a rank outside the set",
            run.ranks.len()
        ));
    }
    Analysis {
        iteration: run.iterations.first().map(|i| i.index),
        ranks,
        top_kernels,
        compute_straggler: straggler.map(|(r, _)| r),
        straggler_excess_ns,
        collectives,
        last_arrivals: last_count.into_iter().collect(),
        notes,
    }
}

fn kind_key(op: &MeasuredOp) -> String {
    match op.kind {
        OpKind::Collective { collective, .. } => format!("{collective:?}"),
        OpKind::Send => "Send".to_string(),
        OpKind::Recv => "Recv".to_string(),
        _ => op.name.clone(),
    }
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

impl Analysis {
    /// The readable report of `trainscope analyze`.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        o.push_str(&format!(
            "iteration: {}\n",
            self.iteration
                .map_or("the whole trace".to_string(), |i| format!(
                    "ProfilerStep#{i}"
                ))
        ));
        o.push_str(&format!(
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
            "rank", "iter us", "compute us", "comm us", "overlap us", "exposed us", "idle us"
        ));
        for r in &self.ranks {
            o.push_str(&format!(
                "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}   compute {} · idle {}\n",
                r.rank,
                us(r.iteration_ns),
                us(r.compute_ns),
                us(r.communication_ns),
                us(r.overlap_ns),
                us(r.exposed_communication_ns),
                us(r.idle_ns),
                pct(r.compute_ns, r.iteration_ns),
                pct(r.idle_ns, r.iteration_ns)
            ));
        }
        if let Some(s) = self.compute_straggler {
            o.push_str(&format!(
                "straggler (longest compute): rank {s}, {} us above the median of the others\n",
                us(self.straggler_excess_ns)
            ));
        }
        if !self.last_arrivals.is_empty() {
            let list: Vec<String> = self
                .last_arrivals
                .iter()
                .map(|(r, n)| format!("rank {r}: {n}"))
                .collect();
            o.push_str(&format!(
                "last to arrive at collectives: {}\n",
                list.join(" · ")
            ));
        }
        if !self.collectives.is_empty() {
            o.push_str("collectives (last arrival, others' longest wait, transfer part):\n");
            for c in self.collectives.iter().take(32) {
                o.push_str(&format!(
                    "  #{:<3} {:<48} last rank {:>4} · wait {:>10} us · transfer {:>10} us\n",
                    c.index,
                    crate::diag::excerpt(&c.name, 48),
                    c.last_rank,
                    us(c.max_wait_ns),
                    us(c.transfer_ns)
                ));
            }
            if self.collectives.len() > 32 {
                o.push_str(&format!(
                    "  … {} more (see --json)\n",
                    self.collectives.len() - 32
                ));
            }
        }
        if !self.top_kernels.is_empty() {
            o.push_str("top kernels (all ranks):\n");
            for k in &self.top_kernels {
                o.push_str(&format!(
                    "  {:>12} us  x{:<6} {}\n",
                    us(k.total_ns),
                    k.count,
                    crate::diag::excerpt(&k.name, 100)
                ));
            }
        }
        for n in &self.notes {
            o.push_str(&format!("note: {n}\n"));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_algebra() {
        let a = union(vec![(5, 10), (0, 3), (2, 4)]);
        assert_eq!(a, vec![(0, 4), (5, 10)]);
        assert_eq!(length(&a), 9);
        let b = union(vec![(3, 6), (9, 20)]);
        assert_eq!(intersection(&a, &b), 1 + 1 + 1);
    }
}
