//! `trainscope simulate FILE... [--mode event]` (the default mode) and
//! `trainscope convert FILE... --to chrome-trace -o PATH`.
//!
//! The event mode reads the files, turns the flags into the core's settings
//! ([`SimConfig`], [`RunOptions`]) and calls the one entry the web page also
//! calls ([`trainscope_core::run::run_files`]), so both print the same
//! numbers. Output: a readable report (stdout; warnings on stderr) or the
//! JSON object of [`trainscope_core::run::RunOutput::report_json`]
//! (`--json`); optionally the simulated timeline as a Chrome trace
//! (`--chrome-trace PATH`) and its spans as CSV (`--spans-csv PATH`).
//! Without flags the settings are exactly `SimConfig::default()` and
//! `RunOptions::default()`.
//!
//! `convert` writes a measured run's timeline (Echo traces, Optimus-Prime
//! logs) without simulating; a described workload is a usage error that
//! points at `simulate --chrome-trace`.
//!
//! Exit codes: 0 success, 2 usage error, 3 a file failed to parse, 4 an
//! invalid simulation configuration.

use crate::simulate::{self, Args, EXIT_CONFIG, EXIT_USAGE};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use trainscope_core::analytical::{NicType, RatioTables};
use trainscope_core::engine::network::PlacementOrder;
use trainscope_core::export;
use trainscope_core::hardware::{gpu_preset, GPU_NAMES};
use trainscope_core::replay::infer::{FitBasis, NetworkOverrides};
use trainscope_core::run::{convert_files, InferredReport, RunOutput, SlowRank};
use trainscope_core::timeline::Timeline;
use trainscope_core::Format;
use trainscope_core::{
    engine::{Algorithm, ScheduleKind, SimConfig},
    run::{run_files, RunError, RunOptions},
};

/// Pipeline schedules (`--schedule`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// All forwards, then all backwards.
    Gpipe,
    /// One forward, one backward after a warm-up (Megatron's default).
    #[value(name = "1f1b")]
    OneFOneB,
    /// Interleaved 1F1B with --virtual-stages model chunks per rank.
    Interleaved,
    /// Zero Bubble ZB-H1: backward split into B and W, W delayed into the
    /// bubbles, 1F1B's peak memory (needs m >= p).
    #[value(name = "zb-h1")]
    ZbH1,
    /// Zero Bubble ZB-H2: longer warm-up, up to 2p - 1 micro-batches in
    /// flight, no bubble once full (needs m >= 2p - 1).
    #[value(name = "zb-h2")]
    ZbH2,
    /// Zero Bubble ZB-V: two chunks per rank in a V shape, 1F1B's peak
    /// memory (needs m >= 2p and an even number of layers per stage).
    Zbv,
    /// DeepSeek-V3's DualPipeV: two V-shaped chunks per rank, forward and
    /// backward of the two chunks overlapped (needs m >= 2p).
    Dualpipev,
}

impl From<Schedule> for ScheduleKind {
    fn from(s: Schedule) -> ScheduleKind {
        match s {
            Schedule::Gpipe => ScheduleKind::GPipe,
            Schedule::OneFOneB => ScheduleKind::OneFOneB,
            Schedule::Interleaved => ScheduleKind::Interleaved,
            Schedule::ZbH1 => ScheduleKind::ZbH1,
            Schedule::ZbH2 => ScheduleKind::ZbH2,
            Schedule::Zbv => ScheduleKind::ZbV,
            Schedule::Dualpipev => ScheduleKind::DualPipeV,
        }
    }
}

/// Collective algorithms (`--algorithm`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlgorithmArg {
    /// Ring all-reduce / all-gather / reduce-scatter.
    Ring,
    /// Hierarchical all-reduce (intra-node ring, inter-node tree).
    Tree,
    /// SimAI-Analytical's per-collective cost.
    Simai,
}

impl From<AlgorithmArg> for Algorithm {
    fn from(a: AlgorithmArg) -> Algorithm {
        match a {
            AlgorithmArg::Ring => Algorithm::Ring,
            AlgorithmArg::Tree => Algorithm::Tree,
            AlgorithmArg::Simai => Algorithm::Simai,
        }
    }
}

/// Flags of the event mode.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Event mode")]
pub struct EventFlags {
    /// Pipeline schedule (default 1f1b; --virtual-stages > 1 implies
    /// interleaved).
    #[arg(long, value_enum)]
    pub schedule: Option<Schedule>,
    /// Model chunks per rank for the interleaved schedule (default 1).
    #[arg(long, value_name = "V")]
    pub virtual_stages: Option<u32>,
    /// Micro-batches per iteration (default: the file's `ga` / GAS).
    #[arg(long, value_name = "M")]
    pub micro_batches: Option<u32>,
    /// Per-step latency across nodes, microseconds (NVLink: a fifth of it;
    /// default 5 / 1).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub latency_us: Option<f64>,
    /// How ranks are laid out on the nodes, fastest-varying dimension first:
    /// tp-dp-pp (default, Megatron), tp-pp-dp, dp-tp-pp, dp-pp-tp, pp-tp-dp,
    /// pp-dp-tp.
    #[arg(long, value_name = "ORDER")]
    pub placement: Option<String>,
    /// Fabric oversubscription X >= 1: inter-node bandwidth is divided by X
    /// (default 1).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub oversubscription: Option<f64>,
    /// Collective cost: ring (default), tree or simai (SimAI-compatible).
    #[arg(long, value_enum)]
    pub algorithm: Option<AlgorithmArg>,
    /// Backward = X x forward where backward is not given (NeuSight
    /// forward-only files, Optimus-Prime logs: default 2; SimAI layers with
    /// no backward compute: off unless given).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub backward_factor: Option<f64>,
    /// Measured runs: fit one compute-scale factor so the prediction meets
    /// the measured iteration time, report it, then simulate the given
    /// settings with it (what-if). An Echo replay meets the measurement
    /// without it (network inferred from the trace; explicit network flags
    /// replace the inferred values as a what-if), so the factor fits only
    /// what is left; Optimus-Prime logs need it.
    #[arg(long)]
    pub calibrate: bool,
    /// Bytes of one stage-to-stage send (default: the file's `pp_comm` or
    /// the traced activation shape).
    #[arg(long, value_name = "N")]
    pub activation_bytes: Option<u64>,
    /// Issue the gradient-sync collectives when the last backward starts
    /// (overlapping it) instead of after it.
    #[arg(long)]
    pub overlap_grad_sync: bool,
    /// NeuSight inputs: how many times the model repeats the described
    /// transformer block (default 36, GPT-2-large).
    #[arg(long, value_name = "N")]
    pub block_repeats: Option<u32>,
    /// Force the input format instead of detecting it: simai-workload,
    /// neusight-tsv, echo-trace, optimus-prime-log, kineto-trace, chakra-et
    /// (hf-config files are models, simulated with --model; with chakra-et a
    /// Chakra set's comm_groups.json is still detected as its groups).
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,
    /// Kineto traces: the ProfilerStep number to analyse (default: the last
    /// one every rank has).
    #[arg(long, value_name = "N")]
    pub iteration: Option<u32>,
    /// Measured runs replayed per rank (Kineto, Echo, Chakra traces): a
    /// what-if with rank R's compute PCT percent slower (`5:30`); its
    /// collectives start later and the others wait for it. The report gives
    /// the iteration with and without it (JSON `slow_rank`).
    #[arg(long, value_name = "R:PCT")]
    pub slow_rank: Option<String>,
    /// Write the simulated timeline as Chrome Trace Event JSON (Perfetto,
    /// chrome://tracing; times in microseconds).
    #[arg(long, value_name = "PATH")]
    pub chrome_trace: Option<PathBuf>,
    /// Write the simulated timeline's spans as CSV.
    #[arg(long, value_name = "PATH")]
    pub spans_csv: Option<PathBuf>,
}

impl EventFlags {
    /// The event-only flags that were given (for the SimAI mode's warning).
    pub fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |set: bool, name: &'static str| {
            if set {
                out.push(name);
            }
        };
        add(self.schedule.is_some(), "--schedule");
        add(self.virtual_stages.is_some(), "--virtual-stages");
        add(self.micro_batches.is_some(), "--micro-batches");
        add(self.latency_us.is_some(), "--latency-us");
        add(self.placement.is_some(), "--placement");
        add(self.oversubscription.is_some(), "--oversubscription");
        add(self.algorithm.is_some(), "--algorithm");
        add(self.backward_factor.is_some(), "--backward-factor");
        add(self.calibrate, "--calibrate");
        add(self.activation_bytes.is_some(), "--activation-bytes");
        add(self.overlap_grad_sync, "--overlap-grad-sync");
        add(self.block_repeats.is_some(), "--block-repeats");
        add(self.format.is_some(), "--format");
        add(self.iteration.is_some(), "--iteration");
        add(self.slow_rank.is_some(), "--slow-rank");
        add(self.chrome_trace.is_some(), "--chrome-trace");
        add(self.spans_csv.is_some(), "--spans-csv");
        out
    }
}

fn parse_format(name: &str) -> std::result::Result<Format, u8> {
    Format::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        eprintln!(
            "error: unknown format `{name}`; expected one of: {}",
            names.join(", ")
        );
        EXIT_USAGE
    })
}

/// The settings the flags give (`Err(code)`: already reported).
pub(crate) fn settings(args: &Args) -> Result<std::result::Result<(SimConfig, RunOptions), u8>> {
    let f = &args.simai;
    let e = &args.event;
    let mut config = SimConfig::default();
    let net = &mut config.network;
    if let Some(g) = f.gpus_per_server {
        net.gpus_per_node = g;
    }
    if let Some(k) = f.nics_per_server {
        net.nics_per_node = k;
    }
    match (f.nvlink_gbps, &f.gpu_type) {
        (Some(v), _) => net.nvlink_gbps = v,
        (None, Some(name)) => match gpu_preset(name) {
            Some(g) => net.nvlink_gbps = g.nvlink_busbw_gbps,
            None => {
                eprintln!(
                    "error: unknown GPU type `{name}`; expected one of: {}",
                    GPU_NAMES.join(", ")
                );
                return Ok(Err(EXIT_CONFIG));
            }
        },
        (None, None) => {}
    }
    match (f.nic_gbps, &f.nic_type) {
        (Some(v), _) => net.nic_gbps = v,
        (None, Some(name)) => match NicType::from_name(name) {
            Some(n) => net.nic_gbps = n.nic_busbw_gbps(),
            None => {
                eprintln!(
                    "error: unknown NIC type `{name}`; expected one of: {}",
                    NicType::NAMES
                );
                return Ok(Err(EXIT_CONFIG));
            }
        },
        (None, None) => {}
    }
    if let Some(us) = e.latency_us {
        if let Err(err) = net.set_latency_us(us) {
            eprint!("{}", err.to_diagnostic().render());
            return Ok(Err(EXIT_CONFIG));
        }
    }
    if let Some(name) = &e.placement {
        match PlacementOrder::parse(name) {
            Ok(order) => net.placement = order,
            Err(why) => {
                eprintln!("error: invalid setting `placement`: {why}");
                return Ok(Err(EXIT_CONFIG));
            }
        }
    }
    if let Some(x) = e.oversubscription {
        // Range-checked with the other settings (exit 4 when below 1).
        net.oversubscription = x;
    }
    if let Some(v) = e.virtual_stages {
        config.virtual_stages = v;
        if v > 1 && e.schedule.is_none() {
            config.schedule = ScheduleKind::Interleaved;
        }
    }
    if let Some(s) = e.schedule {
        config.schedule = s.into();
    }
    config.micro_batches = e.micro_batches;
    if let Some(a) = e.algorithm {
        config.algorithm = a.into();
    }
    config.backward_factor = e.backward_factor;
    config.activation_bytes = e.activation_bytes;
    config.overlap_grad_sync = e.overlap_grad_sync;
    if let Some(n) = e.block_repeats {
        if let Err(d) = trainscope_core::formats::neusight::check_block_repeats(n) {
            eprint!("{}", d.render());
            return Ok(Err(EXIT_CONFIG));
        }
    }
    // Measured replays: an explicit network setting replaces, for its
    // link, what the replay inferred from the trace.
    let network_overrides = NetworkOverrides {
        nvlink_gbps: f.nvlink_gbps.is_some() || f.gpu_type.is_some(),
        nic_gbps: f.nic_gbps.is_some()
            || f.nic_type.is_some()
            || f.nics_per_server.is_some()
            || e.oversubscription.is_some(),
        latency: e.latency_us.is_some(),
        algorithm: e.algorithm.is_some(),
    };
    let mut options = RunOptions {
        block_repeats: e.block_repeats,
        world: f.world,
        calibrate: e.calibrate,
        iteration: e.iteration,
        network_overrides,
        ..RunOptions::default()
    };
    if let Some(text) = &e.slow_rank {
        match SlowRank::parse(text) {
            Ok(sr) => options.slow_rank = Some(sr),
            Err(why) => {
                eprintln!("error: invalid setting `slow-rank`: {why}");
                return Ok(Err(EXIT_CONFIG));
            }
        }
    }
    if let Some(name) = &e.format {
        match parse_format(name) {
            Ok(fm) => options.format = Some(fm),
            Err(code) => return Ok(Err(code)),
        }
    }
    if let Some(dir) = &f.ratio_table_dir {
        let mut tables = RatioTables::builtin();
        let mut warnings = Vec::new();
        if let Err(code) = simulate::load_tables(dir, &mut tables, &mut warnings)? {
            return Ok(Err(code));
        }
        for w in &warnings {
            eprintln!("{}", w.short());
        }
        options.ratio_tables = Some(tables);
    }
    Ok(Ok((config, options)))
}

pub(crate) fn read_files(paths: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
    paths
        .iter()
        .map(|p| {
            let bytes = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            Ok((p.display().to_string(), bytes))
        })
        .collect()
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn print_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("cannot write to stdout"),
    }
}

pub(crate) fn report_error(e: &RunError) -> u8 {
    for d in e.diagnostics() {
        eprint!("{}", d.render());
    }
    e.exit_code()
}

fn write_file(path: &Path, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<()> {
    let mut out = Vec::new();
    write(&mut out).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

pub(crate) fn write_timeline(
    t: &Timeline,
    chrome: Option<&Path>,
    csv: Option<&Path>,
) -> Result<()> {
    if let Some(p) = chrome {
        write_file(p, |w| export::write_chrome_trace(t, w))?;
    }
    if let Some(p) = csv {
        write_file(p, |w| export::write_spans_csv(t, w))?;
    }
    Ok(())
}

/// Run the event mode; returns the exit code.
pub fn run(args: &Args) -> Result<u8> {
    let f = &args.simai;
    for (set, name) in [
        (args.csv.is_some(), "--csv"),
        (f.dp_overlap.is_some(), "--dp-overlap"),
        (f.tp_overlap.is_some(), "--tp-overlap"),
        (f.ep_overlap.is_some(), "--ep-overlap"),
        (f.pp_overlap.is_some(), "--pp-overlap"),
    ] {
        if set {
            eprintln!("warning: {name} belongs to the SimAI-compatible mode (--mode simai); ignored in event mode");
        }
    }
    let (config, options) = match settings(args)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    let files = read_files(&args.files)?;
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let out = match run_files(&refs, &config, &options) {
        Ok(o) => o,
        Err(e) => return Ok(report_error(&e)),
    };
    let e = &args.event;
    write_timeline(
        &out.result.timeline,
        e.chrome_trace.as_deref(),
        e.spans_csv.as_deref(),
    )?;
    if args.json {
        print_stdout(&(serde_json::to_string_pretty(&out.report_json())? + "\n"))?;
    } else {
        print_stdout(&render_text(&out))?;
        for w in &out.warnings {
            eprintln!("{w}");
        }
    }
    Ok(0)
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A micro-batch count that may be fractional (chunks of interleaved
/// schedules): whole numbers without decimals.
fn micro_batches(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0} mb")
    } else {
        format!("{x:.2} mb")
    }
}

fn share(ns: u64, total: u64) -> String {
    if total == 0 {
        "-".to_string()
    } else {
        format!("{:.2}%", ns as f64 / total as f64 * 100.0)
    }
}

/// The readable report.
pub fn render_text(o: &RunOutput) -> String {
    let s = o.summary();
    let p = &o.parallel;
    let c = &o.config;
    let n = &c.network;
    let mut out = if o.kind == "model" {
        format!("{}: event mode (model-level job)\n", s.job)
    } else {
        format!(
            "{}: event mode ({} input, {})\n",
            o.files.join(", "),
            o.kind,
            o.format.name()
        )
    };
    out.push_str(&format!(
        "  parallelism: TP {} · DP {} · PP {} · EP {}{} · world {}\n",
        p.tp,
        p.dp,
        p.pp,
        p.ep,
        if p.cp > 1 {
            format!(" · CP {} (DP counts DP x CP)", p.cp)
        } else {
            String::new()
        },
        p.world()
    ));
    out.push_str(&format!(
        "  schedule: {} · {} micro-batches · {} virtual stage(s) · algorithm {} · activation {} bytes{}\n",
        s.schedule,
        s.micro_batches,
        s.virtual_stages,
        s.algorithm,
        s.activation_bytes,
        if c.compute_scale == 1.0 {
            String::new()
        } else {
            format!(" · compute x {:.4}", c.compute_scale)
        }
    ));
    out.push_str(&format!(
        "  cluster: {} GPUs and {} NICs per node · NVLink {} GB/s · NIC {} GB/s · latency {} / {} us (NVLink / NIC)\n",
        n.gpus_per_node,
        n.nics_per_node,
        n.nvlink_gbps,
        n.nic_gbps,
        n.nvlink_latency_ns as f64 / 1000.0,
        n.nic_latency_ns as f64 / 1000.0
    ));
    out.push_str(&format!(
        "  simulated: {} rank(s){}\n\n",
        s.simulated_ranks,
        if s.representative_ranks {
            " (one representative rank per stage)"
        } else {
            ""
        }
    ));
    let t = s.iteration_time_ns;
    let e = &s.exposed_comm_ns;
    out.push_str(&format!(
        "  reference: stage {} (rank {})\n  {:<22}{:>14}{:>9}\n",
        s.reference_stage, s.reference_rank, "", "time (us)", "share"
    ));
    let rows = [
        ("compute", s.compute_ns),
        ("bubble", s.bubble_ns),
        ("exposed TP comm", e.tp),
        ("exposed EP comm", e.ep),
        ("exposed DP comm", e.dp),
        ("exposed DP_EP comm", e.dp_ep),
        ("exposed PP comm", e.pp),
        ("exposed CP comm", e.cp),
        ("other idle", s.other_idle_ns),
    ];
    // The CP line only for jobs with context parallelism.
    for (what, ns) in rows
        .into_iter()
        .filter(|(what, ns)| *what != "exposed CP comm" || *ns > 0)
    {
        out.push_str(&format!("  {what:<22}{:>14}{:>9}\n", us(ns), share(ns, t)));
    }
    out.push_str(&format!(
        "  {:<22}{:>14}  ({} ms)\n",
        "iteration time",
        us(t),
        ms(t)
    ));
    out.push_str(&format!(
        "  {:<22}{:>14}  (SimAI's closed form, for comparison)\n\n",
        "SimAI bubble",
        us(s.simai_bubble_ns)
    ));
    out.push_str(&format!(
        "  per {}:\n  {:>5} {:>6} {:>12} {:>7} {:>12} {:>14} {:>12} {:>10}\n",
        if s.representative_ranks {
            "stage"
        } else {
            "simulated rank"
        },
        "stage",
        "rank",
        "compute us",
        "busy",
        "bubble us",
        "exp. comm us",
        "end us",
        "peak act."
    ));
    for st in &s.stages {
        out.push_str(&format!(
            "  {:>5} {:>6} {:>12} {:>6.1}% {:>12} {:>14} {:>12} {:>10}\n",
            st.stage,
            st.rank,
            us(st.compute_ns),
            st.busy_share * 100.0,
            us(st.bubble_ns),
            us(st.exposed_comm_ns.total()),
            us(st.end_ns),
            micro_batches(st.peak_activation_micro_batches)
        ));
    }
    out.push_str(
        "  (peak act.: most micro-batches whose activations a rank holds at once, from a forward's start to the end of its backward, or of its W when the backward is split)\n",
    );
    let cp = &s.critical_path;
    let kinds: Vec<String> = cp
        .by_kind_ns
        .iter()
        .map(|(k, v)| format!("{k} {} us", us(*v)))
        .collect();
    out.push_str(&format!(
        "\n  critical path: {} spans in {} segments; {}\n",
        cp.spans,
        cp.segments.len(),
        kinds.join(", ")
    ));
    if let Some(cmp) = &o.comparison {
        out.push_str(&format!(
            "\n  measured iteration {} ms · simulated {} ms · error {:+.2}%\n",
            ms(cmp.measured_iteration_time_ns),
            ms(cmp.simulated_iteration_time_ns),
            cmp.error_percent
        ));
        out.push_str(&format!(
            "  per op kind over measured rank(s) {:?}, us:\n  {:<18}{:>14}{:>14}{:>14}\n",
            cmp.ranks, "kind", "measured", "simulated", "difference"
        ));
        for k in &cmp.by_kind {
            if k.measured_ns.is_none() && k.simulated_ns == 0 {
                continue;
            }
            out.push_str(&format!(
                "  {:<18}{:>14}{:>14}{:>14}\n",
                k.kind,
                k.measured_ns.map_or("-".to_string(), us),
                us(k.simulated_ns),
                k.difference_ns
                    .map_or("-".to_string(), |d| format!("{:+.1}", d as f64 / 1000.0))
            ));
        }
    } else if let Some(m) = o.measured_iteration_time_ns() {
        out.push_str(&format!("\n  measured iteration {} ms\n", ms(m)));
    }
    if let Some(inf) = &o.inferred {
        out.push_str(&render_inferred(inf));
    }
    if let Some(cal) = &o.calibration {
        out.push_str(&format!(
            "\n  calibration: compute scale {:.4} ({} simulations, {} schedule): {} ms vs measured {} ms, error {:+.3}% (uncalibrated {:+.2}%){}\n",
            cal.compute_scale,
            cal.simulations,
            cal.schedule,
            ms(cal.calibrated_iteration_time_ns),
            ms(cal.measured_iteration_time_ns),
            cal.error_percent,
            cal.uncalibrated_error_percent,
            if cal.what_if {
                "; the report above is the what-if with the given settings"
            } else {
                ""
            }
        ));
    }
    if !o.notes.is_empty() {
        out.push('\n');
        for n in &o.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
    }
    let trimmed: Vec<&str> = out.lines().map(str::trim_end).collect();
    trimmed.join("\n") + "\n"
}

/// The `inferred` lines of the readable report: per group and direction
/// the bandwidth, latency, samples and fit error, then the unmeasured
/// stages' scales.
fn render_inferred(inf: &InferredReport) -> String {
    let mut out = format!(
        "\n  inferred from the trace ({} collectives and transfers split into waiting and transfer{}):\n  {:<11}{:<10}{:<16}{:>8}{:>12}{:>12}{:>11}{:>12}\n",
        inf.split_occurrences,
        if inf.clocks_shared {
            ""
        } else {
            "; the ranks' clocks do not look shared"
        },
        "group",
        "direction",
        "basis",
        "samples",
        "GB/s",
        "latency us",
        "rms error",
        "median err"
    );
    for g in &inf.groups {
        let basis = match g.basis {
            FitBasis::Split => "split",
            FitBasis::LeastWaiting => "least waiting",
            FitBasis::NotIdentifiable => "configured",
        };
        let dash = || "-".to_string();
        let (bw, lat, err, median) = match g.bandwidth_gbps {
            Some(bw) => (
                format!("{bw:.1}"),
                if g.latency_identified {
                    format!("{:.1}", g.latency_ns as f64 / 1000.0)
                } else {
                    dash()
                },
                format!("{:.1}%", g.rms_error_percent),
                format!("{:.1}%", g.median_error_percent),
            ),
            None => (dash(), dash(), dash(), dash()),
        };
        out.push_str(&format!(
            "  {:<11}{:<10}{:<16}{:>8}{:>12}{:>12}{:>11}{:>12}\n",
            g.group.name(),
            g.direction.name(),
            basis,
            g.samples,
            bw,
            lat,
            err,
            median
        ));
    }
    if let Some(u) = &inf.unmeasured_stages {
        out.push_str(&format!(
            "  unmeasured stage(s) {:?}: forward x {:.3}, backward x {:.3} of the copied stage, fitted to the measured ranks' waits ({} simulations)\n",
            u.stages, u.forward_scale, u.backward_scale, u.simulations
        ));
    }
    out
}

/// What `convert` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvertTo {
    /// Chrome Trace Event JSON (times in microseconds).
    ChromeTrace,
    /// One CSV row per span.
    SpansCsv,
    /// A SimAI/AICB workload (model-level jobs: `--model`).
    SimaiWorkload,
    /// Chakra execution traces of the simulated job, one `.et` per
    /// simulated rank (per stage for model-level jobs), into the directory
    /// given by -o (ASTRA-sim's input).
    ChakraEt,
}

/// `trainscope convert FILE... --to chrome-trace -o PATH`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// A measured run: the rank traces of one Echo job, or an Optimus-Prime
    /// log (or none with --model); with --to chakra-et any input that
    /// simulates (its simulated job is written).
    #[arg(required_unless_present = "model", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ConvertTo::ChromeTrace)]
    pub to: ConvertTo,
    /// Output file (with --to chakra-et: the output directory).
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: PathBuf,
    /// Force the input format instead of detecting it.
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,
    /// With --model: world size, GPUs.
    #[arg(long, value_name = "N")]
    pub world: Option<u32>,
    /// With --model: the GPU preset (default H100-SXM).
    #[arg(long, value_name = "T")]
    pub gpu_type: Option<String>,
    #[command(flatten)]
    pub model: crate::model::ModelFlags,
}

/// Write a simulated timeline as Chakra ET files `DIR/trainscope.<i>.et`
/// (created if missing), one per rank, and the collective groups their
/// `pg_name`s use as `DIR/comm_groups.json`; `what` names the input in the
/// message, which ends with the ASTRA-sim flags that read them.
pub fn write_chakra(
    what: &str,
    timeline: &trainscope_core::timeline::Timeline,
    parallel: trainscope_core::engine::spec::Parallelism,
    order: trainscope_core::engine::network::PlacementOrder,
    dir: &std::path::Path,
) -> Result<u8> {
    let export = trainscope_core::replay::chakra::write_timeline(timeline, parallel, order);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut stands = Vec::new();
    for i in 0..export.len() {
        let (what, bytes) = export.file(i);
        let path = dir.join(format!("trainscope.{i}.et"));
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        if stands.len() < 8 {
            stands.push(what);
        }
    }
    if export.len() > 8 {
        stands.push("...".to_string());
    }
    let groups = match export.comm_groups_json() {
        Some(json) => {
            let path = dir.join("comm_groups.json");
            std::fs::write(&path, json)
                .with_context(|| format!("cannot write {}", path.display()))?;
            format!(" --comm-group-configuration={}", path.display())
        }
        None => String::new(),
    };
    for w in &export.warnings {
        eprintln!("warning: {w}");
    }
    print_stdout(&format!(
        "{what}: {} Chakra ET file(s) ({}) written to {}\nASTRA-sim: --workload-configuration={}{groups}\n",
        export.len(),
        stands.join(", "),
        dir.display(),
        dir.join("trainscope").display()
    ))?;
    Ok(0)
}

/// Run `convert`; returns the exit code.
pub fn convert(args: &ConvertArgs) -> Result<u8> {
    if let Some(model) = &args.model.model {
        return crate::model::convert(args, model);
    }
    if args.to == ConvertTo::SimaiWorkload {
        eprintln!("error: `--to simai-workload` writes a model-level job: give --model MODEL and its training flags");
        return Ok(EXIT_USAGE);
    }
    let mut options = RunOptions::default();
    if let Some(name) = &args.format {
        match parse_format(name) {
            Ok(f) => options.format = Some(f),
            Err(code) => return Ok(code),
        }
    }
    let files = read_files(&args.files)?;
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    if args.to == ConvertTo::ChakraEt {
        let out = match trainscope_core::run::run_files(
            &refs,
            &trainscope_core::engine::SimConfig::default(),
            &options,
        ) {
            Ok(o) => o,
            Err(e) => return Ok(report_error(&e)),
        };
        for w in &out.warnings {
            eprintln!("{w}");
        }
        let what = out.files.join(", ");
        let order = trainscope_core::engine::SimConfig::default()
            .network
            .placement;
        return write_chakra(
            &what,
            &out.result.timeline,
            out.parallel,
            order,
            &args.output,
        );
    }
    let out = match convert_files(&refs, &options) {
        Ok(o) => o,
        Err(e) => return Ok(report_error(&e)),
    };
    let t = &out.measured.timeline;
    match args.to {
        ConvertTo::ChromeTrace => write_timeline(t, Some(&args.output), None)?,
        ConvertTo::SpansCsv => write_timeline(t, None, Some(&args.output))?,
        // Refused or handled above.
        ConvertTo::SimaiWorkload | ConvertTo::ChakraEt => return Ok(EXIT_USAGE),
    }
    for w in &out.warnings {
        eprintln!("{w}");
    }
    print_stdout(&format!(
        "{}: {} spans of {} rank(s) ({}){} written to {}\n",
        out.files.join(", "),
        t.span_count(),
        out.measured.ranks.len(),
        out.format.name(),
        out.measured
            .iteration_time_ns
            .map_or(String::new(), |ns| format!(
                ", measured iteration {} ms",
                ms(ns)
            )),
        args.output.display()
    ))?;
    Ok(0)
}
