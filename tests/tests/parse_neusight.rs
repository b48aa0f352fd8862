//! NeuSight TSV parser and conversion: snapshots per edge-case fixture and
//! for the seed (with a model digest), plus explicit checks of units (ms ->
//! ns, elements x4 -> bytes), `_grad` attachment, the backward estimate and
//! the block-repeat setting.

use trainscope_core::formats::neusight::{self, NeusightCommType, NeusightOptions};
use trainscope_core::inspect::{inspect, to_json};
use trainscope_core::workload::{CommGroup, CommKind};
use trainscope_tests::fixture_bytes;

fn report(rel: &str) -> String {
    let bytes = fixture_bytes(rel);
    let s = inspect(rel, &bytes, None);
    let json = serde_json::to_string_pretty(&to_json(std::slice::from_ref(&s))).unwrap();
    let rendered: String = s.diagnostics.iter().map(|d| d.render()).collect();
    format!("{json}\n--- rendered diagnostics ---\n{rendered}")
}

fn text(rel: &str) -> String {
    String::from_utf8_lossy(&fixture_bytes(rel)).into_owned()
}

const FIXTURES: [&str; 11] = [
    "sci_notation.tsv",
    "zero_backward.tsv",
    "nonzero_backward.tsv",
    "reordered_header.tsv",
    "header_typo.tsv",
    "bad_rows.tsv",
    "spaces.tsv",
    "orphan_grad.tsv",
    "crlf_bom.tsv",
    "header_only.tsv",
    "mixed_zero_backward.tsv",
];

#[test]
fn edge_case_snapshots() {
    for name in FIXTURES {
        insta::assert_snapshot!(
            format!("neusight__{name}"),
            report(&format!("parse/neusight/{name}"))
        );
    }
}

#[test]
fn seed_snapshot_with_model_digest() {
    let rel = "seeds/neusight_gpt2large_dp_workitems.tsv";
    let t = neusight::parse(rel, &text(rel)).unwrap();
    let job = neusight::to_model(rel, &t, &NeusightOptions::default());
    let mut digest = String::new();
    // Ops outside the block and the first block copy (the others repeat it).
    for o in job.stages[0].blocks[0]
        .ops
        .iter()
        .filter(|o| o.block_index.is_none_or(|b| b == 0))
    {
        digest.push_str(&format!(
            "{:<28} {:?} F {} IG {} WG {} {:?}\n",
            o.name,
            o.block_index,
            o.forward.compute_ns,
            o.input_grad.compute_ns,
            o.weight_grad.compute_ns,
            o.weight_grad
                .comm
                .map(|c| (c.kind, c.group, c.size_bytes, c.asynchronous))
        ));
    }
    insta::assert_snapshot!(
        "neusight_seed",
        format!("{}\n--- model ---\n{digest}", report(rel))
    );
}

#[test]
fn units_are_converted_at_the_boundary() {
    let t = neusight::parse("s", &text("parse/neusight/sci_notation.tsv")).unwrap();
    let tiny = &t.rows[0];
    assert_eq!(tiny.forward_ns, 0); // 4.79e-09 ms
    assert_eq!(tiny.backward_ns, 1_000); // 1E-3 ms
    assert_eq!(tiny.weight_grad_ns, 2_500_000); // 2.5e+00 ms
    let big = &t.rows[1];
    assert_eq!(big.forward_ns, 1_234_500_000); // 1.2345e3 ms
    assert_eq!(big.forward_comm.comm_type, NeusightCommType::AllReduce);
    assert_eq!(big.forward_comm.size_bytes, 4_000); // 1e3 elements
    assert_eq!(big.backward_comm.size_bytes, 800); // 2.0E2 elements
}

#[test]
fn zero_backward_is_estimated_and_grads_attach() {
    let t = neusight::parse("z", &text("parse/neusight/zero_backward.tsv")).unwrap();
    let job = neusight::to_model("z", &t, &NeusightOptions::default());
    let ops = &job.stages[0].blocks[0].ops;
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0].name, "x");
    assert_eq!(ops[0].input_grad.compute_ns, 1_500_000);
    assert_eq!(ops[0].weight_grad.compute_ns, 1_500_000);
    let c = ops[0].weight_grad.comm.unwrap();
    assert_eq!(
        (c.kind, c.group, c.size_bytes, c.asynchronous),
        (CommKind::AllReduce, CommGroup::Dp, 4096, true)
    );
    assert!(job
        .diagnostics
        .iter()
        .any(|d| d.message.contains("2 x forward")));
    // Measured backward is kept as it is.
    let t = neusight::parse("n", &text("parse/neusight/nonzero_backward.tsv")).unwrap();
    let job = neusight::to_model("n", &t, &NeusightOptions::default());
    let op = &job.stages[0].blocks[0].ops[0];
    assert_eq!(
        (op.input_grad.compute_ns, op.weight_grad.compute_ns),
        (3_000_000, 2_000_000)
    );
    assert!(!job
        .diagnostics
        .iter()
        .any(|d| d.message.contains("2 x forward")));
}

#[test]
fn block_repeat_count_is_a_parameter() {
    let rel = "seeds/neusight_gpt2large_dp_workitems.tsv";
    let t = neusight::parse(rel, &text(rel)).unwrap();
    let count = |repeats: u32| {
        let job = neusight::to_model(
            rel,
            &t,
            &NeusightOptions {
                block_repeats: repeats,
                data_parallel: Some(2),
            },
        );
        let ops = &job.stages[0].blocks[0].ops;
        let max_index = ops.iter().filter_map(|o| o.block_index).max();
        (ops.len(), max_index)
    };
    let (one, idx1) = count(1);
    let (two, idx2) = count(2);
    let (def, idx36) = count(36);
    assert_eq!((idx1, idx2, idx36), (Some(0), Some(1), Some(35)));
    let block = two - one;
    assert_eq!(def, one + 35 * block);
    // 51 rows, 9 `_grad` rows attached: 42 ops, of which the block is 34.
    assert_eq!((one, block), (42, 34));
}

#[test]
fn bad_rows_are_skipped_and_counted() {
    let t = neusight::parse("b", &text("parse/neusight/bad_rows.tsv")).unwrap();
    let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["ok", "typo", "ok2"]);
    assert_eq!(t.skipped_rows, 4);
    let e = neusight::parse("h", &text("parse/neusight/header_typo.tsv")).unwrap_err();
    let r = e.render();
    assert!(
        r.contains("`forward_compute_tme` looks like `forward_compute_time`"),
        "{r}"
    );
}

#[test]
fn ten_megabyte_line_is_bounded() {
    let mut t = neusight::COLUMNS.join("\t");
    t.push_str("\nop");
    while t.len() < 10 << 20 {
        t.push_str("\t1.5");
    }
    let tab = neusight::parse("big", &t).unwrap();
    assert_eq!(tab.skipped_rows, 1);
    assert!(tab.diagnostics.iter().all(|d| d.render().len() < 2_000));
}

/// A 10-MB TSV of `_grad` rows whose ops come much later (and orphans):
/// completes only if `_grad` matching is not quadratic.
#[test]
fn ten_megabyte_tsv_with_many_grad_rows_is_linearithmic() {
    let mut t = neusight::COLUMNS.join("\t");
    t.push('\n');
    let row = |name: &str, comm: &str| {
        format!("{name}\t0.5\tNone\t0\t0.25\t{comm}\t64\t0.25\tNone\t0\t0\n")
    };
    let n = 70_000;
    for i in 0..n {
        t.push_str(&row(&format!("op{i}_grad"), "ALLREDUCE_ASYNC"));
    }
    let mut orphans = 0;
    while t.len() < (10 << 20) - 4_000_000 {
        t.push_str(&row(&format!("orphan{orphans}_grad"), "None"));
        orphans += 1;
    }
    for i in 0..n {
        t.push_str(&row(&format!("op{i}"), "None"));
    }
    assert!(t.len() > 9 << 20);
    let table = neusight::parse("big.tsv", &t).unwrap();
    assert_eq!(table.rows.len(), 2 * n + orphans);
    let job = neusight::to_model("big.tsv", &table, &NeusightOptions::default());
    let ops = &job.stages[0].blocks[0].ops;
    assert_eq!(ops.len(), n + orphans);
    assert!(ops
        .iter()
        .filter(|o| o.name.starts_with("op"))
        .all(|o| o.weight_grad.comm.is_some_and(|c| c.size_bytes == 256)));
    // One warning per orphan, but the list stays capped and counts the rest.
    assert!(job.diagnostics.len() <= 203, "{}", job.diagnostics.len());
    assert!(job.diagnostics.iter().any(|d| d
        .message
        .contains("more warning(s) in `big.tsv` were not listed")));
}

#[test]
fn mixed_zero_backward_is_estimated_per_row_and_warned_with_the_line() {
    let rel = "parse/neusight/mixed_zero_backward.tsv";
    let t = neusight::parse(rel, &text(rel)).unwrap();
    let job = neusight::to_model(rel, &t, &NeusightOptions::default());
    let ops = &job.stages[0].blocks[0].ops;
    let op = |n: &str| ops.iter().find(|o| o.name == n).unwrap();
    // Measured rows keep their values.
    assert_eq!(op("embed").input_grad.compute_ns, 1_000_000);
    assert_eq!(op("matmul").weight_grad.compute_ns, 1_500_000);
    // Zero-backward rows: 2 x forward split equally.
    for n in ["ln", "softmax"] {
        assert_eq!(op(n).input_grad.compute_ns, op(n).forward.compute_ns, "{n}");
        assert_eq!(
            op(n).weight_grad.compute_ns,
            op(n).forward.compute_ns,
            "{n}"
        );
        assert!(op(n).forward.compute_ns > 0);
    }
    let warned: Vec<u32> = job
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("estimated backward"))
        .map(|d| d.location.as_ref().unwrap().line)
        .collect();
    assert_eq!(warned, [3, 6], "{:?}", job.diagnostics);
}

#[test]
fn hostile_block_repeat_counts_are_bounded() {
    assert!(neusight::check_block_repeats(36).is_ok());
    let e = neusight::check_block_repeats(u32::MAX).unwrap_err();
    assert!(e.message.contains("out of range"), "{}", e.message);
    assert!(neusight::check_block_repeats(0).is_err());
    let rel = "seeds/neusight_gpt2large_dp_workitems.tsv";
    let t = neusight::parse(rel, &text(rel)).unwrap();
    let job = neusight::to_model(
        rel,
        &t,
        &NeusightOptions {
            block_repeats: u32::MAX,
            data_parallel: None,
        },
    );
    let max = job.stages[0].blocks[0]
        .ops
        .iter()
        .filter_map(|o| o.block_index)
        .max();
    assert_eq!(max, Some(neusight::MAX_BLOCK_REPEATS - 1));
    assert!(job
        .diagnostics
        .iter()
        .any(|d| d.message.contains("above the maximum")));
}
