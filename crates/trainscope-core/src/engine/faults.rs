//! What-if faults injected into the event engine, in its own terms: a slow
//! GPU's compute tasks take longer, a slow link's collectives and transfers
//! run at its pace, and per-kernel jitter draws each compute task's length
//! from a seeded log-normal.
//!
//! - **Slow compute** (`--slow RANKS:FACTOR`): every compute task of the
//!   ranks runs `FACTOR` times as long. `RANKS` is a rank, a list or range
//!   (`17`, `4-7,9`), `nodeN` (the node's GPUs) or `stageN` (every rank of
//!   a pipeline stage). A collective starts when its last member arrives
//!   (the engine's gangs in per-rank jobs, the chain's order in SPMD jobs),
//!   so the others wait for the slowed rank there.
//! - **Transient slow compute** (`--slow RANKS:FACTOR@ONSET+DURATION`):
//!   the slow-down holds only inside a window of the run, given in time
//!   (`17:1.5@2s+500ms`: from 2 s after the run's start for 500 ms; units
//!   `ns`, `us`, `ms`, `s`, `min`) or in iterations (`17:1.5@iter2+1`:
//!   after two iterations, for one, that is the third). Inside a time
//!   window the ranks' compute runs at `1 / FACTOR` of its speed: a task
//!   that runs into or out of the window is slowed for the part of it
//!   inside, so a window covering the whole run is exactly the permanent
//!   slow-down and a window the run never reaches changes nothing. The
//!   engine simulates one iteration from time 0 (iteration 0); the
//!   what-if ([`crate::whatif`]) runs the iterations of a run back to back
//!   ([`Faults::for_iteration`]), each starting when the previous one has
//!   ended on every rank (the optimizer step and the gradient-norm
//!   all-reduce end an iteration on every rank together).
//! - **Slow link** (`--slow-link A-B:FACTOR` or `--slow-link nodeN:FACTOR`):
//!   a collective whose group holds both ends of the link (all-to-alls and
//!   rings cross it) runs at that link's pace, that is its NVLink part (both
//!   ends in one node) or its NIC part (across nodes) `FACTOR` times as
//!   long, for every member (a collective runs at its slowest member's
//!   link); a point-to-point transfer between the two ranks likewise. A
//!   node's NIC slows the NIC part of every collective and transfer that
//!   leaves the node.
//! - **Jitter** (`--jitter PCT --seed N`): each compute task's time is
//!   multiplied by a log-normal draw with mean 1 and coefficient of
//!   variation `PCT`% (sigma^2 = ln(1 + cv^2)), keyed by (seed, rank,
//!   task's place in the rank's program), so a seed gives the same run on
//!   every build, natively and in the browser, whatever the build order.
//!
//! SPMD jobs (described jobs, SimAI workloads) simulate one program per
//! pipeline stage for all of its ranks: a fault on any rank of a stage
//! applies to the stage's program. That is exact when the slowed rank's
//! tensor-, context- or expert-parallel group synchronises every layer
//! and the data-parallel replicas wait for each other at the gradient
//! synchronisation (the step is the slowest replica's); it overstates a
//! slow rank only where its stage's other ranks could run ahead of it
//! without waiting. Per-rank jobs (measured replays) slow exactly the
//! ranks named. [`super::injection`] resolves the faults against a job.

use serde::{Deserialize, Serialize};

use crate::engine::SimError;
use crate::limits;
use crate::rng::SplitMix64;

/// Largest slow-down factor of a compute or link fault.
pub const MAX_FACTOR: f64 = 1000.0;
/// Largest jitter, coefficient of variation in percent.
pub const MAX_JITTER_PERCENT: f64 = 200.0;

/// Which ranks a compute fault slows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum RankScope {
    /// These global ranks (ascending, distinct).
    Ranks(Vec<u32>),
    /// Every GPU of this node (rank / GPUs per node).
    Node(u32),
    /// Every rank of this pipeline stage (0-based).
    Stage(u32),
}

/// Which link a link fault slows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum LinkScope {
    /// The link between two ranks (lower first).
    Between(u32, u32),
    /// A node's NIC(s): all traffic leaving the node.
    Nic(u32),
}

/// When a transient fault holds, from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Window {
    /// From `onset_ns` after the run's start, for `duration_ns`.
    Time { onset_ns: u64, duration_ns: u64 },
    /// After `first` whole iterations, for `count` iterations.
    Iterations { first: u32, count: u32 },
}

/// Largest window onset or duration in time, ns (a week).
pub const MAX_WINDOW_NS: u64 = 7 * 24 * 3600 * 1_000_000_000;
/// Largest window onset or length in iterations, and the most iterations
/// a what-if with windows runs.
pub const MAX_ITERATIONS: u32 = 10_000;

/// One compute slow-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowCompute {
    pub scope: RankScope,
    pub factor: f64,
    /// `None`: the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// One link slow-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowLink {
    pub scope: LinkScope,
    pub factor: f64,
}

/// Per-kernel noise: a log-normal factor with mean 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Jitter {
    /// Coefficient of variation, percent.
    pub cv_percent: f64,
    pub seed: u64,
}

/// Every fault of one what-if. Empty: the engine runs as it always did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Faults {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow: Vec<SlowCompute>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_links: Vec<SlowLink>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<Jitter>,
}

fn factor(text: &str, whole: &str) -> Result<f64, String> {
    let f = text
        .trim()
        .trim_end_matches('x')
        .parse::<f64>()
        .map_err(|_| format!("`{text}` in `{whole}` is not a factor (e.g. 1.25 for 25% slower)"))?;
    check_factor(f)?;
    Ok(f)
}

/// A slow-down factor: finite, at least 1, at most [`MAX_FACTOR`].
pub fn check_factor(f: f64) -> Result<(), String> {
    if f.is_finite() && (1.0..=MAX_FACTOR).contains(&f) {
        Ok(())
    } else {
        Err(format!(
            "{} is not a slow-down factor between 1 and {} (1.25 = 25% slower)",
            limits::number(f),
            limits::number(MAX_FACTOR)
        ))
    }
}

fn index(text: &str, what: &str, whole: &str) -> Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| format!("`{text}` in `{whole}` is not a {what} (a whole number)"))
}

/// `17`, `4-7,9` (ranks), `node3`, `stage2`.
fn rank_scope(text: &str, whole: &str) -> Result<RankScope, String> {
    let t = text.trim();
    if let Some(n) = t.strip_prefix("node") {
        return Ok(RankScope::Node(index(n, "node", whole)?));
    }
    if let Some(s) = t.strip_prefix("stage") {
        return Ok(RankScope::Stage(index(s, "stage", whole)?));
    }
    let mut ranks = Vec::new();
    for part in t.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (index(a, "rank", whole)?, index(b, "rank", whole)?);
                if a > b {
                    return Err(format!("`{part}` in `{whole}` is not an ascending range"));
                }
                if b - a >= limits::MAX_WORLD {
                    return Err(format!("`{part}` in `{whole}` is too long a range"));
                }
                ranks.extend(a..=b);
            }
            None => ranks.push(index(part, "rank", whole)?),
        }
    }
    ranks.sort_unstable();
    ranks.dedup();
    Ok(RankScope::Ranks(ranks))
}

/// `2s`, `500ms`, `1.5min`, `250us`, `100ns` (a bare number: seconds
/// are not assumed; the unit is required).
fn time_ns(text: &str, what: &str, whole: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit_ns = match unit.trim() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        _ => {
            return Err(format!(
            "`{t}` in `{whole}` is not a {what} with a unit (e.g. `2s`, `500ms`, `250us`, `1min`)"
        ))
        }
    };
    let v = num
        .parse::<f64>()
        .map_err(|_| format!("`{t}` in `{whole}` is not a {what} (e.g. `2s`, `500ms`)"))?;
    let ns = (v * unit_ns).round();
    if !(0.0..=MAX_WINDOW_NS as f64).contains(&ns) {
        return Err(format!(
            "`{t}` in `{whole}`: a {what} is at most a week (604800s)"
        ));
    }
    Ok(ns as u64)
}

impl Window {
    /// `2s+500ms` (onset and duration in time) or `iter2+1` (after two
    /// iterations, for one), as it follows the `@` of `--slow`.
    pub fn parse(text: &str, whole: &str) -> Result<Window, String> {
        let (a, b) = text.split_once('+').ok_or_else(|| {
            format!("`@{text}` in `{whole}` is not @ONSET+DURATION (e.g. `@2s+500ms`, `@iter2+1`)")
        })?;
        if let Some(first) = a.trim().strip_prefix("iter") {
            let first = index(first, "number of iterations", whole)?;
            let count = index(b, "number of iterations", whole)?;
            if count == 0 || first >= MAX_ITERATIONS || count > MAX_ITERATIONS {
                return Err(format!(
                    "`@{text}` in `{whole}`: the window starts after 0 to {} iterations and lasts 1 to {MAX_ITERATIONS}",
                    MAX_ITERATIONS - 1
                ));
            }
            return Ok(Window::Iterations { first, count });
        }
        let onset_ns = time_ns(a, "onset", whole)?;
        let duration_ns = time_ns(b, "duration", whole)?;
        if duration_ns == 0 {
            return Err(format!(
                "`@{text}` in `{whole}`: the duration must be more than 0"
            ));
        }
        Ok(Window::Time {
            onset_ns,
            duration_ns,
        })
    }

    /// This window as it applies to the iteration `index` of a run,
    /// simulated from its own time 0, that started `start_ns` after the
    /// run: shifted, shortened, or `None` once it has ended.
    pub fn for_iteration(&self, index: u32, start_ns: u64) -> Option<Window> {
        match *self {
            Window::Time {
                onset_ns,
                duration_ns,
            } => {
                let end = onset_ns.saturating_add(duration_ns);
                (end > start_ns).then(|| {
                    let onset = onset_ns.max(start_ns);
                    Window::Time {
                        onset_ns: onset - start_ns,
                        duration_ns: end - onset,
                    }
                })
            }
            Window::Iterations { first, count } => {
                let end = first.saturating_add(count);
                (end > index).then(|| {
                    let f = first.max(index);
                    Window::Iterations {
                        first: f - index,
                        count: end - f,
                    }
                })
            }
        }
    }

    /// True when the window has not ended by the iteration `index` that
    /// starts `start_ns` after the run.
    pub fn pending(&self, index: u32, start_ns: u64) -> bool {
        self.for_iteration(index, start_ns).is_some()
    }
}

impl std::fmt::Display for Window {
    /// `2s+500ms`, `iter2+1` (each time in the largest unit that keeps it
    /// whole).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn time(ns: u64) -> String {
            for (unit, per) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
                if ns > 0 && ns.is_multiple_of(per) {
                    return format!("{}{unit}", ns / per);
                }
            }
            format!("{ns}ns")
        }
        match *self {
            Window::Time {
                onset_ns,
                duration_ns,
            } => write!(f, "{}+{}", time(onset_ns), time(duration_ns)),
            Window::Iterations { first, count } => write!(f, "iter{first}+{count}"),
        }
    }
}

impl SlowCompute {
    /// `RANKS:FACTOR[@WINDOW]`, as `--slow` takes it: `17:1.25`, `4-7:2`,
    /// `node3:1.1`, `stage2:1.5`, `17:1.5@2s+500ms`, `17:1.5@iter2+1`.
    pub fn parse(text: &str) -> Result<SlowCompute, String> {
        let (spec, window) = match text.split_once('@') {
            Some((s, w)) => (s, Some(Window::parse(w, text)?)),
            None => (text, None),
        };
        let (r, f) = spec.rsplit_once(':').ok_or_else(|| {
            format!("`{text}` is not RANKS:FACTOR[@ONSET+DURATION] (e.g. `17:1.25`, `node3:1.1`, `stage2:1.5@2s+500ms`)")
        })?;
        Ok(SlowCompute {
            scope: rank_scope(r, text)?,
            factor: factor(f, text)?,
            window,
        })
    }
}

impl SlowLink {
    /// `A-B:FACTOR` (the link between ranks A and B) or `nodeN:FACTOR`
    /// (node N's NICs), as `--slow-link` takes it.
    pub fn parse(text: &str) -> Result<SlowLink, String> {
        let (l, f) = text.rsplit_once(':').ok_or_else(|| {
            format!("`{text}` is not LINK:FACTOR (e.g. `0-8:2` between ranks 0 and 8, `node1:2` for node 1's NICs)")
        })?;
        let l = l.trim();
        let scope = if let Some(n) = l.strip_prefix("node") {
            LinkScope::Nic(index(n, "node", text)?)
        } else {
            let (a, b) = l.split_once('-').ok_or_else(|| {
                format!("`{l}` in `{text}` is not a link: two ranks `A-B` or a node's NICs `nodeN`")
            })?;
            let (a, b) = (index(a, "rank", text)?, index(b, "rank", text)?);
            if a == b {
                return Err(format!(
                    "`{l}` in `{text}` names one rank twice: a link joins two ranks"
                ));
            }
            LinkScope::Between(a.min(b), a.max(b))
        };
        Ok(SlowLink {
            scope,
            factor: factor(f, text)?,
        })
    }
}

impl Jitter {
    /// A jitter of `cv_percent` (0 to [`MAX_JITTER_PERCENT`]).
    pub fn new(cv_percent: f64, seed: u64) -> Result<Jitter, String> {
        if cv_percent.is_finite() && (0.0..=MAX_JITTER_PERCENT).contains(&cv_percent) {
            Ok(Jitter { cv_percent, seed })
        } else {
            Err(format!(
                "{} is not a jitter between 0 and {} (percent, the coefficient of variation)",
                limits::number(cv_percent),
                limits::number(MAX_JITTER_PERCENT)
            ))
        }
    }

    /// Log-normal sigma for the coefficient of variation.
    fn sigma(&self) -> f64 {
        let cv = self.cv_percent / 100.0;
        (1.0 + cv * cv).ln().sqrt()
    }

    /// The factor of one compute task: keyed by (seed, rank, sequence).
    pub fn factor_of(&self, rank: u32, seq: u64) -> f64 {
        let s = self.sigma();
        if s == 0.0 {
            return 1.0;
        }
        let key = (u64::from(rank) << 40) ^ seq;
        let z = SplitMix64::keyed(self.seed, key).normal();
        (s * z - s * s / 2.0).exp()
    }
}

impl std::fmt::Display for RankScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RankScope::Ranks(r) => {
                f.write_str(&crate::formats::lex::number_ranges(r).replace(", ", ","))
            }
            RankScope::Node(n) => write!(f, "node{n}"),
            RankScope::Stage(s) => write!(f, "stage{s}"),
        }
    }
}

impl std::fmt::Display for SlowCompute {
    /// The `--slow` argument that gives this fault back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.scope, limits::number(self.factor))?;
        match &self.window {
            Some(w) => write!(f, "@{w}"),
            None => Ok(()),
        }
    }
}

impl std::fmt::Display for SlowLink {
    /// The `--slow-link` argument that gives this fault back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.scope {
            LinkScope::Between(a, b) => write!(f, "{a}-{b}:{}", limits::number(self.factor)),
            LinkScope::Nic(n) => write!(f, "node{n}:{}", limits::number(self.factor)),
        }
    }
}

impl Faults {
    /// The faults as the front ends take them: each `--slow` and
    /// `--slow-link` argument, and the jitter percent (0 or `None`: none)
    /// with its seed. `Err`: the setting's name (`slow`, `slow-link`,
    /// `jitter`) and the message.
    pub fn from_flags<'a>(
        slow: impl IntoIterator<Item = &'a str>,
        slow_links: impl IntoIterator<Item = &'a str>,
        jitter_percent: Option<f64>,
        seed: u64,
    ) -> Result<Faults, (&'static str, String)> {
        let slow = slow
            .into_iter()
            .map(|t| SlowCompute::parse(t).map_err(|e| ("slow", e)))
            .collect::<Result<_, _>>()?;
        let slow_links = slow_links
            .into_iter()
            .map(|t| SlowLink::parse(t).map_err(|e| ("slow-link", e)))
            .collect::<Result<_, _>>()?;
        let jitter = match jitter_percent {
            Some(p) if p != 0.0 => Some(Jitter::new(p, seed).map_err(|e| ("jitter", e))?),
            _ => None,
        };
        Ok(Faults {
            slow,
            slow_links,
            jitter,
        })
    }

    /// Some fault holds only inside a window.
    pub fn has_windows(&self) -> bool {
        self.slow.iter().any(|s| s.window.is_some())
    }

    /// The faults as they apply to iteration `index` of a run, simulated
    /// from its own time 0, that started `start_ns` after the run: each
    /// window shifted to the iteration, a window that has ended dropped.
    pub fn for_iteration(&self, index: u32, start_ns: u64) -> Faults {
        let mut f = self.clone();
        f.slow = self
            .slow
            .iter()
            .filter_map(|s| match &s.window {
                None => Some(s.clone()),
                Some(w) => w.for_iteration(index, start_ns).map(|w| SlowCompute {
                    window: Some(w),
                    ..s.clone()
                }),
            })
            .collect();
        f
    }

    /// No fault at all.
    pub fn is_empty(&self) -> bool {
        self.slow.is_empty() && self.slow_links.is_empty() && self.jitter.is_none()
    }

    /// Each fault as the CLI flag that gives it (`--slow 17:1.25`, ...),
    /// in the order given: the what-if's `injected` list and the page's
    /// CLI command.
    pub fn flags(&self) -> Vec<String> {
        let mut out: Vec<String> = self.slow.iter().map(|s| format!("--slow {s}")).collect();
        out.extend(self.slow_links.iter().map(|l| format!("--slow-link {l}")));
        if let Some(j) = self.jitter {
            out.push(format!(
                "--jitter {} --seed {}",
                limits::number(j.cv_percent),
                j.seed
            ));
        }
        out
    }

    /// The ranges every factor must be in ([`SimConfig::validate`](crate::engine::SimConfig::validate)).
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |name: &'static str, reason: String| SimError::InvalidConfig { name, reason };
        for s in &self.slow {
            check_factor(s.factor).map_err(|r| bad("slow", r))?;
            if let Some(w) = &s.window {
                // The window as text, back through the parser's checks.
                Window::parse(&w.to_string(), &s.to_string()).map_err(|r| bad("slow", r))?;
            }
        }
        for l in &self.slow_links {
            check_factor(l.factor).map_err(|r| bad("slow_link", r))?;
        }
        if let Some(j) = self.jitter {
            Jitter::new(j.cv_percent, j.seed).map_err(|r| bad("jitter", r))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranks_nodes_stages_and_links() {
        let s = SlowCompute::parse("4-6,9:1.5").unwrap();
        assert_eq!(s.scope, RankScope::Ranks(vec![4, 5, 6, 9]));
        assert_eq!(s.factor, 1.5);
        assert_eq!(s.to_string(), "4-6,9:1.5");
        assert_eq!(
            SlowCompute::parse("node3:1.1").unwrap().scope,
            RankScope::Node(3)
        );
        assert_eq!(
            SlowCompute::parse("stage2:2").unwrap().scope,
            RankScope::Stage(2)
        );
        assert_eq!(
            SlowLink::parse("9-1:2").unwrap().scope,
            LinkScope::Between(1, 9)
        );
        assert_eq!(SlowLink::parse("node1:3").unwrap().to_string(), "node1:3");
        for bad in ["17", "x:2", "3:0.5", "3:nan", "3:2000", "7-3:2", "node:2"] {
            assert!(SlowCompute::parse(bad).is_err(), "{bad}");
        }
        for bad in ["3:2", "3-3:2", "a-b:2", "0-1:0.9"] {
            assert!(SlowLink::parse(bad).is_err(), "{bad}");
        }
        assert!(Jitter::new(-1.0, 0).is_err());
        assert!(Jitter::new(500.0, 0).is_err());
    }

    #[test]
    fn parses_windows_in_time_and_iterations_and_gives_them_back() {
        let s = SlowCompute::parse("17:1.25@2s+500ms").unwrap();
        assert_eq!(
            s.window,
            Some(Window::Time {
                onset_ns: 2_000_000_000,
                duration_ns: 500_000_000
            })
        );
        assert_eq!(s.to_string(), "17:1.25@2s+500ms");
        assert_eq!(
            SlowCompute::parse("0:2@1.5ms+250us").unwrap().to_string(),
            "0:2@1500us+250us"
        );
        assert_eq!(
            SlowCompute::parse("stage1:2@1min+7ns").unwrap().to_string(),
            "stage1:2@60s+7ns"
        );
        let it = SlowCompute::parse("node0:1.5@iter2+1").unwrap();
        assert_eq!(it.window, Some(Window::Iterations { first: 2, count: 1 }));
        assert_eq!(it.to_string(), "node0:1.5@iter2+1");
        for t in ["1:2@0s+1ns", "1:2@iter0+3", "3:1.1@10ms+1s"] {
            let p = SlowCompute::parse(t).unwrap();
            assert_eq!(SlowCompute::parse(&p.to_string()).unwrap(), p, "{t}");
        }
        for bad in [
            "1:2@2s",
            "1:2@2+1s",
            "1:2@2s+0ms",
            "1:2@2s+1h",
            "1:2@iter1+0",
            "1:2@iterx+1",
            "1:2@-1s+1s",
            "1:2@9999999s+1s",
        ] {
            assert!(SlowCompute::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_window_shifts_to_each_iteration_and_ends() {
        let w = Window::Time {
            onset_ns: 150,
            duration_ns: 100,
        };
        // Iteration starting at 100: from 50 for 100; at 200: from 0 for
        // 50; at 250: ended.
        assert_eq!(
            w.for_iteration(1, 100),
            Some(Window::Time {
                onset_ns: 50,
                duration_ns: 100
            })
        );
        assert_eq!(
            w.for_iteration(2, 200),
            Some(Window::Time {
                onset_ns: 0,
                duration_ns: 50
            })
        );
        assert_eq!(w.for_iteration(3, 250), None);
        let it = Window::Iterations { first: 2, count: 2 };
        assert_eq!(
            it.for_iteration(1, 0),
            Some(Window::Iterations { first: 1, count: 2 })
        );
        assert_eq!(
            it.for_iteration(3, 0),
            Some(Window::Iterations { first: 0, count: 1 })
        );
        assert_eq!(it.for_iteration(4, 0), None);
        let mut f = Faults::default();
        f.slow.push(SlowCompute::parse("1:2@iter0+1").unwrap());
        f.slow.push(SlowCompute::parse("2:2").unwrap());
        assert!(f.has_windows());
        assert!(!f.for_iteration(1, 10).has_windows());
        assert_eq!(f.for_iteration(1, 10).slow.len(), 1);
    }

    #[test]
    fn jitter_has_mean_one_and_its_spread() {
        let j = Jitter::new(10.0, 3).unwrap();
        let n = 100_000u64;
        let xs: Vec<f64> = (0..n).map(|i| j.factor_of(5, i)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.002, "{mean}");
        assert!((sd - 0.10).abs() < 0.003, "{sd}");
        assert_eq!(j.factor_of(5, 17), j.factor_of(5, 17));
        assert_ne!(j.factor_of(5, 17), j.factor_of(6, 17));
        assert_eq!(Jitter::new(0.0, 3).unwrap().factor_of(1, 1), 1.0);
    }
}
