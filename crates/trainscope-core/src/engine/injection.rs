//! The what-if faults ([`super::faults`]) resolved against one job's
//! placement: per simulated program, the factor its compute runs at and
//! the factors of its collectives' NVLink and NIC parts, and the slowed
//! rank pairs of its transfers. The builder multiplies by them
//! ([`super::build`]); everything else of the engine never sees a fault.

use crate::engine::faults::{Faults, Jitter, LinkScope, RankScope, Window};
use crate::engine::network::Placement;
use crate::engine::spec::{GroupKind, JobMode, JobSpec};
use crate::engine::{scale, SimError};

/// Resolve the faults against one job's placement: what each simulated
/// program's compute, collectives and transfers are slowed by. Refuses
/// ranks, nodes or stages the job does not have, and, for per-rank jobs,
/// compute faults on ranks the job does not simulate.
pub(crate) fn resolve(
    faults: &Faults,
    job: &JobSpec,
    placement: &Placement,
    ranks: &[u32],
) -> Result<Resolved, SimError> {
    let world = job.parallel.world();
    let gpn = placement.gpus_per_node;
    let nodes = world.div_ceil(u64::from(gpn));
    let bad = |name: &'static str, reason: String| SimError::InvalidConfig { name, reason };
    let check_rank = |name: &'static str, r: u32| {
        if u64::from(r) < world {
            Ok(())
        } else {
            Err(bad(
                name,
                format!("rank {r} is not in this job (ranks 0 to {})", world - 1),
            ))
        }
    };
    let check_node = |name: &'static str, n: u32| {
        if u64::from(n) < nodes {
            Ok(())
        } else {
            Err(bad(
                name,
                format!(
                    "node {n} is not in this job ({nodes} node(s) of {gpn} GPUs: node0 to node{})",
                    nodes - 1
                ),
            ))
        }
    };
    let n_prog = job.programs.len();
    let stage_of = |r: u32| placement.coords_of(r).pp;
    // The programs that stand for rank `r`: its stage's (SPMD) or its own.
    let progs_of = |r: u32| -> Vec<usize> {
        match job.mode {
            JobMode::Spmd => {
                let s = stage_of(r);
                (0..n_prog)
                    .filter(|&i| job.programs[i].stage == s)
                    .collect()
            }
            JobMode::PerRank => (0..n_prog).filter(|&i| ranks[i] == r).collect(),
        }
    };
    let node_ranks = |n: u32| placement.node_ranks(n);
    let mut compute = vec![1.0f64; n_prog];
    // Per program: its time windows (start, end, factor), as given.
    let mut timed: Vec<Vec<(u64, u64, f64)>> = vec![Vec::new(); n_prog];
    for s in &faults.slow {
        let targets: Vec<usize> = match &s.scope {
            RankScope::Ranks(rs) => {
                let mut t = Vec::new();
                for &r in rs {
                    check_rank("slow", r)?;
                    let p = progs_of(r);
                    if p.is_empty() {
                        let mut sim: Vec<u32> = ranks.to_vec();
                        sim.sort_unstable();
                        return Err(bad(
                            "slow",
                            format!(
                                "rank {r} is not simulated by this replay (its ranks: {})",
                                crate::formats::lex::number_ranges(&sim)
                            ),
                        ));
                    }
                    t.extend(p);
                }
                t
            }
            RankScope::Node(n) => {
                check_node("slow", *n)?;
                node_ranks(*n).flat_map(progs_of).collect()
            }
            RankScope::Stage(st) => {
                if *st >= job.parallel.pp {
                    return Err(bad(
                        "slow",
                        format!(
                            "stage {st} is not in this job (stages 0 to {})",
                            job.parallel.pp - 1
                        ),
                    ));
                }
                (0..n_prog)
                    .filter(|&i| job.programs[i].stage == *st)
                    .collect()
            }
        };
        for i in targets {
            match s.window {
                // This simulation is iteration 0 of the run.
                None | Some(Window::Iterations { first: 0, .. }) => {
                    compute[i] = compute[i].max(s.factor)
                }
                Some(Window::Iterations { .. }) => {}
                Some(Window::Time {
                    onset_ns,
                    duration_ns,
                }) => timed[i].push((onset_ns, onset_ns.saturating_add(duration_ns), s.factor)),
            }
        }
    }
    let windows: Vec<Vec<(u64, u64, f64)>> = timed
        .iter()
        .zip(&compute)
        .map(|(w, &perm)| segments(w, perm))
        .collect();
    let windows = if windows.iter().all(Vec::is_empty) {
        Vec::new()
    } else {
        windows
    };
    // Per program and group kind: (NVLink part, NIC part) factors.
    let mut coll = vec![[(1.0f64, 1.0f64); GroupKind::EVERY.len()]; n_prog];
    let mut mark = |members: &[u32], kind: GroupKind, intra: f64, nic: f64| {
        let mut progs: Vec<usize> = Vec::new();
        match job.mode {
            JobMode::Spmd => {
                if let Some(&m) = members.first() {
                    progs.extend(progs_of(m));
                }
            }
            JobMode::PerRank => {
                progs.extend((0..n_prog).filter(|&i| members.binary_search(&ranks[i]).is_ok()))
            }
        }
        for i in progs {
            let c = &mut coll[i][kind.index()];
            c.0 = c.0.max(intra);
            c.1 = c.1.max(nic);
        }
    };
    let mut p2p: Vec<(u32, u32, f64, f64)> = Vec::new();
    for l in &faults.slow_links {
        match l.scope {
            LinkScope::Between(a, b) => {
                check_rank("slow_link", a)?;
                check_rank("slow_link", b)?;
                let same_node = placement.node_of(a) == placement.node_of(b);
                let (intra, nic) = if same_node {
                    (l.factor, 1.0)
                } else {
                    (1.0, l.factor)
                };
                for kind in GroupKind::EVERY {
                    if kind == GroupKind::Pp {
                        continue;
                    }
                    let members = placement.group_members(a, kind);
                    if members.len() > 1 && members.binary_search(&b).is_ok() {
                        mark(&members, kind, intra, nic);
                    }
                }
                p2p.push((a, b, intra, nic));
            }
            LinkScope::Nic(n) => {
                check_node("slow_link", n)?;
                for r in node_ranks(n) {
                    for kind in GroupKind::EVERY {
                        if kind == GroupKind::Pp {
                            continue;
                        }
                        let members = placement.group_members(r, kind);
                        if members.iter().any(|&m| placement.node_of(m) != n) {
                            mark(&members, kind, 1.0, l.factor);
                        }
                    }
                    let pipe = placement.group_members(r, GroupKind::Pp);
                    for &m in &pipe {
                        if placement.node_of(m) != n {
                            p2p.push((r.min(m), r.max(m), 1.0, l.factor));
                        }
                    }
                }
            }
        }
    }
    Ok(Resolved {
        compute,
        coll,
        p2p,
        mode: job.mode,
        stages: job.programs.iter().map(|p| p.stage).collect(),
        jitter: faults.jitter,
        windows,
    })
}

/// Time windows `w` (start, end, factor) of a program whose compute runs
/// `perm` times as long throughout as disjoint ascending segments, each
/// with the factor on top of `perm` (the largest of its windows' and
/// `perm`, over `perm`); segments that add nothing are left out.
fn segments(w: &[(u64, u64, f64)], perm: f64) -> Vec<(u64, u64, f64)> {
    let mut cuts: Vec<u64> = w.iter().flat_map(|&(a, b, _)| [a, b]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out: Vec<(u64, u64, f64)> = Vec::new();
    for pair in cuts.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let f = w
            .iter()
            .filter(|&&(s, e, _)| s <= a && b <= e)
            .map(|x| x.2)
            .fold(perm, f64::max);
        let rel = f / perm;
        if rel <= 1.0 {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.1 == a && last.2 == rel => last.1 = b,
            _ => out.push((a, b, rel)),
        }
    }
    out
}

/// [`Faults`] against one job: what the builder multiplies.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// Per program: its compute factor.
    compute: Vec<f64>,
    /// Per program and [`GroupKind::index`]: (NVLink part, NIC part).
    coll: Vec<[(f64, f64); GroupKind::EVERY.len()]>,
    /// Slowed rank pairs for point-to-point transfers: (a, b, NVLink, NIC).
    p2p: Vec<(u32, u32, f64, f64)>,
    mode: JobMode,
    /// Per program: its stage.
    stages: Vec<u32>,
    jitter: Option<Jitter>,
    /// Per program: its compute's slow windows of time on top of
    /// `compute` ([`super::event::windowed_end_ns`]); empty when no
    /// program has one.
    windows: Vec<Vec<(u64, u64, f64)>>,
}

/// `(total, nic)` with the NVLink part (`total - nic`) and the NIC part
/// scaled by their factors.
fn scale_parts(total: u64, nic: u64, (intra, nic_f): (f64, f64)) -> (u64, u64) {
    let nic2 = scale(nic, nic_f);
    let rest = scale(total.saturating_sub(nic), intra);
    (rest.saturating_add(nic2), nic2)
}

impl Resolved {
    /// A compute task's time on program `prog` (rank `rank`), the `seq`-th
    /// compute task of that program.
    pub(crate) fn compute_ns(&self, prog: u32, rank: u32, seq: u64, ns: u64) -> u64 {
        let mut f = self.compute[prog as usize];
        if let Some(j) = &self.jitter {
            f *= j.factor_of(rank, seq);
        }
        scale(ns, f)
    }

    /// Program `prog`'s slow windows of time (disjoint, ascending), if any.
    pub(crate) fn windows(&self, prog: u32) -> Option<&[(u64, u64, f64)]> {
        self.windows
            .get(prog as usize)
            .filter(|w| !w.is_empty())
            .map(Vec::as_slice)
    }

    /// A collective's `(total, nic)` on program `prog`.
    pub(crate) fn collective(
        &self,
        prog: u32,
        kind: GroupKind,
        total: u64,
        nic: u64,
    ) -> (u64, u64) {
        scale_parts(total, nic, self.coll[prog as usize][kind.index()])
    }

    /// A transfer's `(total, nic)` from program `from` (rank `ra`) to `to`
    /// (rank `rb`). In SPMD jobs a slowed pair between the two stages
    /// counts (the program stands for every pipeline of the stage).
    pub(crate) fn transfer(
        &self,
        placement: &Placement,
        (from, ra): (u32, u32),
        (to, rb): (u32, u32),
        total: u64,
        nic: u64,
    ) -> (u64, u64) {
        let mut f = (1.0f64, 1.0f64);
        for &(a, b, intra, nic_f) in &self.p2p {
            let hit = match self.mode {
                JobMode::PerRank => (a.min(b), a.max(b)) == (ra.min(rb), ra.max(rb)),
                JobMode::Spmd => {
                    let (sa, sb) = (placement.coords_of(a).pp, placement.coords_of(b).pp);
                    let (sf, st) = (self.stages[from as usize], self.stages[to as usize]);
                    let same_pipe = {
                        let (ca, cb) = (placement.coords_of(a), placement.coords_of(b));
                        ca.tp == cb.tp && ca.dp == cb.dp
                    };
                    same_pipe && ((sa, sb) == (sf, st) || (sb, sa) == (sf, st))
                }
            };
            if hit {
                f = (f.0.max(intra), f.1.max(nic_f));
            }
        }
        scale_parts(total, nic, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_parts_keep_the_nic_share() {
        assert_eq!(scale_parts(100, 40, (1.0, 2.0)), (140, 80));
        assert_eq!(scale_parts(100, 40, (2.0, 1.0)), (160, 40));
        assert_eq!(scale_parts(100, 0, (1.0, 1.0)), (100, 0));
    }

    #[test]
    fn overlapping_windows_become_disjoint_segments_of_the_larger_factor() {
        let w = [(0, 100, 2.0), (50, 150, 3.0), (200, 300, 1.5)];
        assert_eq!(
            segments(&w, 1.0),
            vec![(0, 50, 2.0), (50, 150, 3.0), (200, 300, 1.5)]
        );
        // On top of a permanent 2x: only what exceeds it, relative to it.
        assert_eq!(segments(&w, 2.0), vec![(50, 150, 1.5)]);
        assert!(segments(&[], 1.0).is_empty());
    }
}
