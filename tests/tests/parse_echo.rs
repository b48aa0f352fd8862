//! Echo trace parser and run assembly: snapshots per edge-case fixture and
//! for the seed, the literal-delimiter split, `None` values, profiling zeros,
//! file-name facts, and several rank files forming one run (missing and
//! duplicate ranks reported).

use trainscope_core::formats::echo;
use trainscope_core::inspect::{inspect, inspect_set, to_json};
use trainscope_core::workload::{CommGroup, CommKind, OpKind, TrainingPhase};
use trainscope_tests::{fixture_bytes, FixtureSet};

fn render(summaries: &[trainscope_core::inspect::FileSummary]) -> String {
    let json = serde_json::to_string_pretty(&to_json(summaries)).unwrap();
    let rendered: String = summaries
        .iter()
        .flat_map(|s| s.diagnostics.iter().map(|d| d.render()))
        .collect();
    format!("{json}\n--- rendered diagnostics ---\n{rendered}")
}

fn report(rel: &str) -> String {
    render(&[inspect(rel, &fixture_bytes(rel), None)])
}

fn text(rel: &str) -> String {
    String::from_utf8_lossy(&fixture_bytes(rel)).into_owned()
}

const FIXTURES: [&str; 7] = [
    "none_values.txt",
    "profiling_zeros.txt",
    "description_commas.txt",
    "truncated.txt",
    "malformed_lines.txt",
    "wd4_tp1_pp2_rank5_mismatch.txt",
    "long_lines.txt",
];

#[test]
fn edge_case_snapshots() {
    for name in FIXTURES {
        insta::assert_snapshot!(
            format!("echo__{name}"),
            report(&format!("parse/echo/{name}"))
        );
    }
}

#[test]
fn seed_snapshot_with_ops() {
    let rel = "seeds/echo_megatron_trace_rank7_tp2_pp4.txt";
    let run = echo::parse_run(&[(rel, &text(rel))]);
    let mut digest = String::new();
    for op in &run.ranks[0].ops {
        digest.push_str(&format!(
            "{:<16} {:?} {:?} start {:?} dur {:?} mb {:?} bytes {:?} subs {} own {:?}\n",
            op.name,
            op.kind,
            op.phase,
            op.start_ns,
            op.duration_ns,
            op.micro_batch,
            op.message_bytes,
            op.sub_ops.len(),
            op.own_duration_ns()
        ));
    }
    insta::assert_snapshot!(
        "echo_seed",
        format!("{}\n--- ops ---\n{digest}", report(rel))
    );
}

#[test]
fn description_with_commas_and_quotes() {
    let t = echo::parse("d", &text("parse/echo/description_commas.txt")).unwrap();
    assert_eq!(t.skipped_lines, 0);
    assert_eq!(
        t.ops[0].description.as_deref(),
        Some("model_chunk.finish_grad_sync(), All-reduce / reduce-scatter across DP replicas, group_kind (sic), x=1")
    );
    assert_eq!(t.ops[0].group_kind.as_deref(), Some("dp"));
    assert_eq!(t.ops[1].sub_ops.len(), 2);
    assert_eq!(t.ops[1].sub_ops[1].trace_src_func.as_deref(), Some("it's"));
    assert_eq!(t.ops[1].sub_ops[1].shape.as_deref(), Some(&[2u64, 2][..]));
    let run = echo::to_run(&[t]);
    let sub = &run.ranks[0].ops[1].sub_ops[1];
    assert_eq!(
        sub.kind,
        OpKind::Collective {
            collective: CommKind::Broadcast,
            group: CommGroup::Tp
        }
    );
    assert_eq!(sub.message_bytes, Some(32));
    assert_eq!(run.ranks[0].ops[0].message_bytes, Some(1_702_466_560 * 4));
}

#[test]
fn none_values_and_profiling_zeros_mean_unknown_timing() {
    let run = echo::parse_run(&[("n", &text("parse/echo/none_values.txt"))]);
    let ops = &run.ranks[0].ops;
    assert_eq!((ops[0].start_ns, ops[0].duration_ns), (None, None));
    assert_eq!(ops[0].state, None);
    assert_eq!(ops[1].start_ns, Some(1_002_000_000));
    assert_eq!(ops[1].sub_ops[0].message_bytes, Some(64));
    let run = echo::parse_run(&[("z", &text("parse/echo/profiling_zeros.txt"))]);
    assert!(run.ranks[0].ops.iter().all(|o| o.start_ns.is_none()));
    assert!(run.iterations.is_empty());
    assert!(run
        .diagnostics
        .iter()
        .any(|d| d.message.contains("profiling-mode placeholder")));
}

#[test]
fn truncated_lines_are_skipped_with_location() {
    let t = echo::parse("t", &text("parse/echo/truncated.txt")).unwrap();
    assert_eq!(t.ops.len(), 2);
    assert_eq!(t.skipped_lines, 2);
    let lines: Vec<u32> = t
        .diagnostics
        .iter()
        .filter_map(|d| d.location.as_ref().map(|l| l.line))
        .collect();
    assert_eq!(lines, [2, 4]);
}

#[test]
fn rank_files_form_one_run() {
    let names = [
        "parse/echo/wd2_tp1_pp2_numl4_bs2_rank0_job.txt",
        "parse/echo/wd2_tp1_pp2_numl4_bs2_rank1_job.txt",
        "parse/echo/dup/wd2_tp1_pp2_numl4_bs2_rank1_job.txt",
        "seeds/echo_megatron_trace_rank7_tp2_pp4.txt",
    ];
    let fx = FixtureSet::read(&names);
    let files = fx.files();
    let s = inspect_set(&files, None);
    insta::assert_snapshot!("echo_run_set", render(&s));
    // The three job files form one run of ranks 0 and 1; the seed its own.
    assert_eq!(s[0].ranks.as_deref(), Some(&[0u32, 1][..]));
    assert_eq!(s[1].file_ranks.as_deref(), Some(&[1u32][..]));
    assert_eq!(s[2].file_ranks.as_deref(), Some(&[][..]));
    assert_eq!(s[3].ranks.as_deref(), Some(&[7u32][..]));
    assert!(s[0]
        .diagnostics
        .iter()
        .any(|d| d.message.contains("rank 1 appears twice")));
    // Job iteration: rank 0 starts at 5000 ms, rank 1 ends at 5018.5 ms.
    assert_eq!(
        s[0].iteration_times_ns.as_deref(),
        Some(&[18_500_000u64][..])
    );

    let run = echo::parse_run(&[(names[0], &text(names[0])), (names[1], &text(names[1]))]);
    assert_eq!(run.parallel.micro_batch_size, Some(2));
    assert_eq!(run.parallel.activation_bytes, 16 * 2 * 32 * 2);
    let r1 = run.rank(1).unwrap();
    assert_eq!(r1.stage, Some(1));
    assert_eq!(r1.ops[1].kind, OpKind::Recv);
    assert_eq!(r1.ops[1].phase, Some(TrainingPhase::Forward));
    assert!(run
        .diagnostics
        .iter()
        .all(|d| !d.message.contains("missing")));
}

#[test]
fn file_name_facts() {
    let i = echo::parse_file_name("x/wd16_tp2_pp4_numl32_bs2_gbs64_rank13_it.txt");
    assert_eq!(
        (i.world, i.tp, i.pp, i.layers, i.micro_batch_size, i.rank),
        (Some(16), Some(2), Some(4), Some(32), Some(2), Some(13))
    );
}

#[test]
fn ten_megabyte_line_is_bounded() {
    let mut desc = String::with_capacity(10 << 20);
    while desc.len() < 10 << 20 {
        desc.push_str("a, (b), c=d ");
    }
    let t = format!(
        "rank:0:forward_step(stage_id=0,batch_id=0,mg_state=steady,duration=1.0,description={desc},group_kind=None,input__shape=None,input__dtype=None,timestamp=5.0,sub_operations=[])\nrank:0:forward_step(stage_id=0,batch_id=1,duration={desc}\n"
    );
    let tr = echo::parse("big", &t).unwrap();
    assert_eq!(tr.ops.len(), 1);
    assert_eq!(tr.skipped_lines, 1);
    assert!(tr.diagnostics.iter().all(|d| d.render().len() < 2_000));
}

/// One file with thousands of ranks, each producing run-level warnings
/// (stage off the layout, no `optimizer_step`): the run's list stays under
/// the per-file cap and says how many were not listed.
#[test]
fn run_level_diagnostics_are_capped() {
    let mut t = String::new();
    for r in 0..20_000u32 {
        t.push_str(&format!(
            "rank:{r}:forward_step(stage_id=7,batch_id=0,mg_state=steady,duration=1.0,description=None,group_kind=None,input__shape=None,input__dtype=None,timestamp=5.0,sub_operations=[])\n"
        ));
    }
    let tr = echo::parse("wd20000_tp1_pp1_rank0_job.txt", &t).unwrap();
    let run = echo::to_run(std::slice::from_ref(&tr));
    assert_eq!(run.ranks.len(), 20_000);
    assert!(run.diagnostics.len() <= 203, "{}", run.diagnostics.len());
    assert!(run.diagnostics.iter().any(|d| d
        .message
        .contains("more warning(s) in `wd20000_tp1_pp1_rank0_job.txt` were not listed")));
    let s = trainscope_core::inspect::inspect("wd20000_tp1_pp1_rank0_job.txt", t.as_bytes(), None);
    assert!(s.diagnostics.len() <= 203, "{}", s.diagnostics.len());
}

#[test]
fn huge_durations_saturate_instead_of_overflowing() {
    let sub = "'trace_src_func=x,duration=18446744073709,timestamp=1.0,input__shape=None,input__dtype=None,func_name=f,group=tp,comm_func=all_reduce'";
    let t = format!(
        "rank:0:forward_step(stage_id=0,batch_id=0,mg_state=steady,duration=18446744073709,description=None,group_kind=None,input__shape=None,input__dtype=None,timestamp=18446744073709,sub_operations=[{sub}, {sub}])\nrank:0:optimizer_step(stage_id=0,batch_id=0,mg_state=steady,duration=18446744073709,description=None,group_kind=None,input__shape=None,input__dtype=None,timestamp=18446744073709,sub_operations=[])\n"
    );
    let tr = echo::parse("huge", &t).unwrap();
    assert_eq!(tr.ops.len(), 2);
    let run = echo::to_run(std::slice::from_ref(&tr));
    let op = &run.ranks[0].ops[0];
    assert_eq!(op.sub_ops.len(), 2);
    assert_eq!(op.own_duration_ns(), Some(0));
    assert!(run.steady_iteration_ns().is_some());
    let s = trainscope_core::inspect::inspect("huge", t.as_bytes(), None);
    assert!(s.job.is_some());
}

/// Errors late in ~4-KB lines quote the text around the column (with `…`
/// on the cut sides) and keep the caret under the offending text.
#[test]
fn long_lines_quote_a_window_with_the_caret_under_the_error() {
    let rel = "parse/echo/long_lines.txt";
    let tr = echo::parse(rel, &text(rel)).unwrap();
    assert_eq!(tr.skipped_lines, 2);
    let errs: Vec<_> = tr
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && d.location.is_some())
        .collect();
    assert_eq!(errs.len(), 2);
    for (d, bad) in errs.iter().zip(["1O2.0", "'trace_src_func=x"]) {
        let loc = d.location.as_ref().unwrap();
        assert!(loc.column > 150, "{}", loc.column);
        let r = d.render();
        let lines: Vec<&str> = r.lines().collect();
        let quoted = lines[3].split_once(" | ").unwrap().1;
        let caret = lines[4].split_once(" | ").unwrap().1;
        assert!(caret.ends_with('^'), "{r}");
        let under: String = quoted
            .chars()
            .skip(caret.chars().count() - 1)
            .take(bad.chars().count())
            .collect();
        assert_eq!(under, bad, "{r}");
    }
}
