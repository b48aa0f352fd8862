//! Text rendering of an event-mode run's report ([`render_text`]): the
//! one home of the readable report that `simulate` and `--model` print.

use trainscope_core::replay::infer::FitBasis;
use trainscope_core::run::{InferredReport, RunOutput};
use trainscope_core::whatif::WhatIfReport;

pub(crate) fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

pub(crate) fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A micro-batch count that may be fractional (chunks of interleaved
/// schedules): whole numbers without decimals.
pub(crate) fn micro_batches(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0} mb")
    } else {
        format!("{x:.2} mb")
    }
}

pub(crate) fn share(ns: u64, total: u64) -> String {
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
        ("host-bound", s.host_bound_ns),
    ];
    // The CP line only for jobs with context parallelism, the host's only
    // for jobs with a host model.
    for (what, ns) in rows
        .into_iter()
        .filter(|(what, ns)| !matches!(*what, "exposed CP comm" | "host-bound") || *ns > 0)
    {
        out.push_str(&format!("  {what:<22}{:>14}{:>9}\n", us(ns), share(ns, t)));
    }
    // Host time, not GPU time: the host waiting for the device.
    for (what, ns) in [
        ("host sync stall", s.sync_stall_ns),
        ("launch queue wait", s.launch_queue_wait_ns),
    ] {
        if ns > 0 {
            out.push_str(&format!("  {what:<22}{:>14}  (host time)\n", us(ns)));
        }
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
    if let Some(w) = &o.whatif {
        out.push_str(&render_whatif(w));
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

/// The what-if lines: the faults, S against the ideal, the blame and the
/// sensitivity table.
fn render_whatif(w: &WhatIfReport) -> String {
    let mut out = String::from("\n  what-if");
    if !w.injected.is_empty() {
        out.push_str(&format!(": {}", w.injected.join(" ")));
    }
    out.push('\n');
    if w.ideal != "as given" {
        out.push_str(&format!(
            "    step {} ms vs {} ms with {}: slow-down S = {:.4}\n",
            ms(w.iteration_time_ns),
            ms(w.baseline_iteration_time_ns),
            w.ideal,
            w.slowdown
        ));
    }
    if !w.iteration_times_ns.is_empty() {
        let times: Vec<String> = w.iteration_times_ns.iter().map(|&t| ms(t)).collect();
        out.push_str(&format!(
            "    iterations as run (ms; the step above is their mean): {}\n",
            times.join(", ")
        ));
    }
    if !w.blame.is_empty() {
        out.push_str(
            "    blame (share of S - 1 removed by putting the slice back to its ideal):\n",
        );
        for b in &w.blame {
            let by = serde_json::to_value(b.by).ok();
            let by = by.as_ref().and_then(|v| v.as_str()).unwrap_or("");
            out.push_str(&format!(
                "      {:<6} {:<28} {:>8.4}  (step {} ms)\n",
                by,
                b.name,
                b.share,
                ms(b.iteration_time_ns)
            ));
        }
    }
    if let Some(first) = w.sensitivity.first() {
        out.push_str(&format!(
            "    sensitivity: each stage's ranks {}x slower in turn (step {} ms as given):\n",
            trainscope_core::limits::number(first.factor),
            ms(w.iteration_time_ns)
        ));
        for s in &w.sensitivity {
            out.push_str(&format!(
                "      stage {:<4} step {:>10} ms  {:+7.2}%  carried by {}\n",
                s.stage,
                ms(s.iteration_time_ns),
                s.cost_percent,
                s.carried_by
            ));
        }
    }
    out.push_str(&format!("    ({} simulations)\n", w.simulations));
    out
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
