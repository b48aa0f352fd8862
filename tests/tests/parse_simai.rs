//! SimAI / AICB workload parser: one snapshot per edge-case fixture (the
//! inspect JSON plus every diagnostic rendered as the user sees it), seed
//! snapshots with a digest of the normalised model, explicit checks of the
//! facts each fixture exists for, and generated 10-MB single lines.

use trainscope_core::formats::simai::{self, Collective, CommGroup, CommType};
use trainscope_core::inspect::{inspect, to_json};
use trainscope_core::workload::Format;
use trainscope_core::workload::{CommGroup as G, CommKind, DescribedJob, LayerRole};
use trainscope_tests::fixture_bytes;

/// The inspect JSON of one fixture plus its rendered diagnostics.
fn report(rel: &str, forced: Option<Format>) -> String {
    let bytes = fixture_bytes(rel);
    let s = inspect(rel, &bytes, forced);
    let json = serde_json::to_string_pretty(&to_json(std::slice::from_ref(&s))).unwrap();
    let rendered: String = s.diagnostics.iter().map(|d| d.render()).collect();
    format!("{json}\n--- rendered diagnostics ---\n{rendered}")
}

fn text(rel: &str) -> String {
    String::from_utf8_lossy(&fixture_bytes(rel)).into_owned()
}

/// One line per layer op of the model (stage 0), for seed snapshots.
fn digest(job: &DescribedJob) -> String {
    let mut out = format!("parallel: {:?}\n", job.parallel);
    let Some(st) = job.stages.first() else {
        return out;
    };
    let line = |o: &trainscope_core::workload::LayerOp| {
        let c = |p: &trainscope_core::workload::PhaseOp| match p.comm {
            Some(c) => format!(
                "{}+{:?}/{:?}/{}{}",
                p.compute_ns,
                c.kind,
                c.group,
                c.size_bytes,
                if c.asynchronous { "/async" } else { "" }
            ),
            None => p.compute_ns.to_string(),
        };
        format!(
            "  {:<20} {:?} F {} | IG {} | WG {} | upd {}{}\n",
            o.name,
            o.role,
            c(&o.forward),
            c(&o.input_grad),
            c(&o.weight_grad),
            o.update_ns,
            if o.checkpoint { " [checkpoint]" } else { "" }
        )
    };
    out.push_str(&format!("before ({}):\n", st.before.len()));
    st.before.iter().for_each(|o| out.push_str(&line(o)));
    for (i, b) in st.blocks.iter().enumerate() {
        out.push_str(&format!("block {i} x{} ({} ops):\n", b.repeat, b.ops.len()));
        b.ops.iter().for_each(|o| out.push_str(&line(o)));
    }
    out.push_str(&format!("after ({}):\n", st.after.len()));
    st.after.iter().for_each(|o| out.push_str(&line(o)));
    out
}

const FIXTURES: [&str; 32] = [
    "empty.txt",
    "blank_only.txt",
    "binary.bin",
    "crlf.txt",
    "bom.txt",
    "invalid_utf8.txt",
    "truncated.txt",
    "overflow.txt",
    "header_overflow.txt",
    "header_variants.txt",
    "missing_defaults.txt",
    "tabs_spaces.txt",
    "count_mismatch.txt",
    "big_sizes.txt",
    "comm_types.txt",
    "allreduce_async.txt",
    "ep_types.txt",
    "checkpoints.txt",
    "checkpoints_short.txt",
    "bad_records.txt",
    "ga_block_once.txt",
    "ga_copies_mismatch.txt",
    "unknown_policy.txt",
    "no_count_line.txt",
    "bad_count.txt",
    "policy_data.txt",
    "policy_model.txt",
    "policy_hybrid_data_model.txt",
    "policy_hybrid_model_data.txt",
    "policy_hybrid_dlrm.txt",
    "policy_micro.txt",
    "exact_integers.txt",
];

#[test]
fn edge_case_snapshots() {
    for name in FIXTURES {
        let rel = format!("parse/simai/{name}");
        // Force the format so that unrecognisable inputs still reach the parser.
        let forced = matches!(name, "empty.txt" | "blank_only.txt" | "binary.bin")
            .then_some(Format::SimaiWorkload);
        insta::assert_snapshot!(format!("simai__{name}"), report(&rel, forced));
    }
}

#[test]
fn seed_snapshots_with_model_digest() {
    for name in [
        "simai_llama65b_tp8_pp4_vpp8.txt",
        "simai_405b_tp8_pp16_ga16_sp.txt",
    ] {
        let rel = format!("seeds/{name}");
        let w = simai::parse(name, &text(&rel)).unwrap();
        let job = simai::to_model(name, &w);
        insta::assert_snapshot!(
            format!("simai_seed__{name}"),
            format!("{}\n--- model ---\n{}", report(&rel, None), digest(&job))
        );
    }
}

#[test]
fn seed001_recovers_blocks_and_count() {
    let w = simai::parse("s1", &text("seeds/simai_405b_tp8_pp16_ga16_sp.txt")).unwrap();
    let job = simai::to_model("s1", &w);
    let st = &job.stages[0];
    assert_eq!(st.before.len(), 6);
    assert_eq!(st.after.len(), 7);
    assert_eq!(st.micro_batch_count(), 16);
    // The first copy differs (embedding weight-grad time): kept as it is.
    assert_eq!(
        st.blocks.iter().map(|b| b.repeat).collect::<Vec<_>>(),
        [1, 15]
    );
    assert_eq!(st.blocks[0].ops[0].weight_grad.compute_ns, 1_879_040);
    assert_eq!(st.blocks[1].ops[0].weight_grad.compute_ns, 2_864_860);
    assert_eq!(st.executed_op_count(), 557);
    assert_eq!(job.parallel.dp, 8);
    assert!(job
        .diagnostics
        .iter()
        .any(|d| d.message.contains("not identical")));
}

#[test]
fn identical_copies_collapse_with_a_note() {
    let rel = "parse/simai/crlf.txt";
    let w = simai::parse(rel, &text(rel)).unwrap();
    let job = simai::to_model(rel, &w);
    let st = &job.stages[0];
    assert_eq!(st.blocks.len(), 1);
    assert_eq!(st.blocks[0].repeat, 2);
    assert_eq!(st.blocks[0].ops.len(), 3);
    assert_eq!(st.before[0].role, LayerRole::GradSync);
    assert_eq!(st.after[1].role, LayerRole::Optimizer);
    assert!(job
        .diagnostics
        .iter()
        .any(|d| d.message.contains("AICB unrolls gradient accumulation")));
    // AICB's placeholder compute 1 becomes 0; 4-byte optimizer all-reduce kept.
    assert_eq!(st.blocks[0].ops[0].input_grad.compute_ns, 0);
    let opt = st.after[1].forward.comm.unwrap();
    assert_eq!((opt.kind, opt.size_bytes), (CommKind::AllReduce, 4));
}

#[test]
fn crlf_and_bom_parse_like_plain_text() {
    let plain = simai::parse("p", &text("parse/simai/bom.txt").replace('\u{feff}', "")).unwrap();
    for rel in ["parse/simai/crlf.txt", "parse/simai/bom.txt"] {
        let s = inspect(rel, &fixture_bytes(rel), None);
        assert!(!s.has_errors(), "{rel}: {:?}", s.diagnostics);
        let w = simai::parse(rel, &text(rel)).unwrap();
        assert_eq!(w.records, plain.records, "{rel}");
        assert!(w.diagnostics.is_empty(), "{rel}: {:?}", w.diagnostics);
    }
}

#[test]
fn header_variants_are_all_understood() {
    let w = simai::parse("h", &text("parse/simai/header_variants.txt")).unwrap();
    let h = &w.header;
    assert_eq!(
        (h.tp, h.pp, h.ep, h.ga, h.vpp, h.world),
        (4, 2, 2, 4, 1, Some(16))
    );
    assert_eq!(h.pp_comm_bytes, 50_331_648);
    assert_eq!(h.checkpoints, [3, 5]);
    assert_eq!(h.checkpoint_initiates, [4]);
    assert_eq!(w.records.len(), 1);
}

#[test]
fn checkpoint_lists_cover_every_listed_layer() {
    let w = simai::parse("c", &text("parse/simai/checkpoints.txt")).unwrap();
    assert_eq!(w.header.checkpoints, [0, 2, 4]);
    assert_eq!(w.header.checkpoint_initiates, [3, 5]);
    let job = simai::to_model("c", &w);
    let ops = &job.stages[0].blocks[0].ops;
    let marked: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.checkpoint)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(marked, [0, 2, 4]);
    let init: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.initiates_recompute)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(init, [3, 5]);
    // A list shorter than its count keeps what is there, with a warning.
    let w = simai::parse("s", &text("parse/simai/checkpoints_short.txt")).unwrap();
    assert_eq!(w.header.checkpoints, [1, 2]);
    assert_eq!(w.header.checkpoint_initiates, [9]);
    assert!(w
        .diagnostics
        .iter()
        .any(|d| d.message.contains("lists only 2")));
}

#[test]
fn comm_type_spellings() {
    let w = simai::parse("c", &text("parse/simai/comm_types.txt")).unwrap();
    let r = &w.records;
    let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
    // b (`ALLREDUSE`), c (`ALLGATHR_EP`) and f (`allreduce`) are typos of
    // known names: errors, records skipped.
    assert_eq!(names, ["a", "d", "e", "g"]);
    assert_eq!(w.skipped_records, 3);
    assert_eq!(r[0].fwd_comm.comm_type, CommType::Broadcast);
    assert_eq!(r[0].ig_comm.comm_type, CommType::None);
    // `FOO_BAR` is far from every known name: no collective, a warning.
    assert_eq!(r[3].fwd_comm.comm_type, CommType::Unknown);
    assert_eq!(r[3].wg_comm.comm_type, CommType::SendRecv);
    let errors: Vec<(u32, &str)> = w
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.location.as_ref().unwrap().line, d.message.as_str()))
        .collect();
    assert_eq!(
        errors,
        [
            (4, "failed to parse SimAI workload (unknown comm type `ALLREDUSE` in field 4; did you mean `ALLREDUCE`?); record skipped"),
            (5, "failed to parse SimAI workload (unknown comm type `ALLGATHR_EP` in field 7; did you mean `ALLGATHER_EP`?); record skipped"),
            (8, "failed to parse SimAI workload (unknown comm type `allreduce` in field 4; did you mean `ALLREDUCE`?); record skipped"),
        ]
    );
    assert!(w
        .diagnostics
        .iter()
        .any(|d| !d.is_error()
            && d.message == "unknown comm type `FOO_BAR`; treated as no collective"));
    let w = simai::parse("a", &text("parse/simai/allreduce_async.txt")).unwrap();
    assert_eq!(
        w.records[0].fwd_comm.comm_type,
        CommType::Collective(Collective::AllReduce, CommGroup::Unscoped)
    );
    assert_eq!(w.records[1].wg_comm.comm_type, CommType::Unknown);
    let w = simai::parse("e", &text("parse/simai/ep_types.txt")).unwrap();
    for r in &w.records {
        let want = if r.name.ends_with("dpep") {
            CommGroup::DpEp
        } else {
            CommGroup::Ep
        };
        for c in [r.fwd_comm, r.ig_comm, r.wg_comm] {
            assert_eq!(c.collective().map(|x| x.1), Some(want), "{}", r.name);
        }
    }
    let job = simai::to_model("e", &w);
    assert_eq!(job.parallel.dp_ep, 1);
    let op = &job.stages[0].blocks[0].ops[4];
    assert_eq!(op.forward.comm.unwrap().group, G::DpEp);
}

#[test]
fn sizes_above_4_gib_are_kept() {
    let w = simai::parse("b", &text("parse/simai/big_sizes.txt")).unwrap();
    assert_eq!(w.records[0].wg_comm.size_bytes, 6_236_471_296);
    assert_eq!(w.records[1].fwd_comm.size_bytes, 38_654_705_664);
    // 1.8446744073709552e19 does not fit in 64 bits: that record is skipped.
    assert_eq!(w.skipped_records, 1);
}

#[test]
fn one_bad_record_never_loses_the_rest() {
    let w = simai::parse("b", &text("parse/simai/bad_records.txt")).unwrap();
    let names: Vec<&str> = w.records.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["ok1", "ok2"]);
    assert_eq!(w.skipped_records, 3);
    let lines: Vec<u32> = w
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.location.as_ref().map(|l| l.line))
        .collect();
    assert_eq!(lines, [4, 5, 6]);
    let last = w.diagnostics.last().unwrap();
    assert_eq!(
        last.message,
        "2 record(s) read, 3 skipped because they could not be parsed"
    );
    let first = w.diagnostics[0].render();
    assert!(first.contains("expected 12 fields, found 11"), "{first}");
    assert!(first.contains("--> b:4:"), "{first}");
    assert!(
        first.contains("hint: a SimAI record is 12 fields"),
        "{first}"
    );
}

#[test]
fn count_mismatch_trusts_the_records() {
    let w = simai::parse("c", &text("parse/simai/count_mismatch.txt")).unwrap();
    assert_eq!((w.declared_records, w.records.len()), (839, 3));
    assert!(w.diagnostics[0]
        .message
        .contains("declares 839 records but the file has 3"));
}

#[test]
fn every_policy_is_accepted() {
    for p in simai::Policy::ALL {
        let t = format!(
            "{}\tmodel_parallel_NPU_group: 1 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 2\n1\nl\t-1\t5\tNONE\t0\t5\tNONE\t0\t5\tALLREDUCE\t64\t100\n",
            p.as_str()
        );
        let w = simai::parse("p", &t).unwrap();
        assert_eq!(w.header.policy, p);
        assert!(w.diagnostics.is_empty(), "{p:?}: {:?}", w.diagnostics);
        assert_eq!(
            trainscope_core::formats::detect("p", &t).unwrap(),
            Format::SimaiWorkload
        );
    }
}

#[test]
fn ten_megabyte_single_lines_stay_bounded() {
    let header = "HYBRID_TRANSFORMER model_parallel_NPU_group: 1 ep: 1 pp: 1 vpp: 1 ga: 1\n";
    // A 10-MB record line.
    let mut t = String::from(header);
    t.push_str("1\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tNONE\t0\t100");
    while t.len() < 10 << 20 {
        t.push_str("\t12345");
    }
    t.push('\n');
    let w = simai::parse("big", &t).unwrap();
    assert_eq!(w.skipped_records, 1);
    assert!(w.diagnostics.len() <= 3);
    assert!(w.diagnostics.iter().all(|d| d.render().len() < 2_000));
    // What the user sees for it, snapshotted (a window of the line around
    // the column, the caret under it).
    let rendered: String = w.diagnostics.iter().map(|d| d.render()).collect();
    insta::assert_snapshot!("simai__ten_megabyte_record_line", rendered);
    // A 10-MB header line of unknown keys.
    let mut t = String::from("DATA ");
    while t.len() < 10 << 20 {
        t.push_str("bogus_key: 7 ");
    }
    t.push_str("\n0\n");
    let w = simai::parse("big", &t).unwrap();
    assert!(w.diagnostics.len() <= 20, "{}", w.diagnostics.len());
    // A 10-MB name with no separator at all.
    let t = "A".repeat(10 << 20);
    let e = simai::parse("big", &t).unwrap_err();
    assert!(e.render().len() < 2_000);
}

#[test]
fn many_bad_records_are_capped_but_counted() {
    let mut t = String::from("DATA model_parallel_NPU_group: 1 ep: 1 pp: 1 vpp: 1 ga: 1\n5000\n");
    for _ in 0..5000 {
        t.push_str("bad -1 1\n");
    }
    let w = simai::parse("many", &t).unwrap();
    assert_eq!(w.skipped_records, 5000);
    assert!(w.diagnostics.len() <= 202);
    assert!(w.diagnostics.iter().any(|d| d
        .message
        .contains("more error(s) in `many` were not listed")));
}

#[test]
fn float_written_integers_are_exact_and_fractions_refused() {
    let w = simai::parse("e", &text("parse/simai/exact_integers.txt")).unwrap();
    let names: Vec<&str> = w.records.iter().map(|r| r.name.as_str()).collect();
    // 9007199254740993.0 is not rounded to ...992 as an f64 would.
    assert_eq!(names, ["exact", "sci"]);
    assert_eq!(w.records[0].fwd_comm.size_bytes, 9_007_199_254_740_993);
    assert_eq!(w.records[1].wg_comm.size_bytes, 2_500);
    assert_eq!(w.skipped_records, 2);
    // 12.5 bytes and 1e-400 bytes: located errors that say why, never 12 or 0.
    let errs: Vec<&trainscope_core::diag::Diagnostic> = w
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && d.location.is_some())
        .collect();
    assert_eq!(errs.len(), 2, "{:?}", w.diagnostics);
    for (d, line, text) in [(errs[0], 4, "12.5"), (errs[1], 5, "1e-400")] {
        assert!(d.message.contains("fractional"), "{}", d.message);
        assert!(d.message.contains(text), "{}", d.message);
        assert_eq!(d.location.as_ref().unwrap().line, line);
        assert!(d.hint.is_some());
    }
}

#[test]
fn policies_without_pipeline_parse_as_one_stage() {
    for (name, policy) in [
        ("policy_model.txt", simai::Policy::Model),
        (
            "policy_hybrid_data_model.txt",
            simai::Policy::HybridDataModel,
        ),
        (
            "policy_hybrid_model_data.txt",
            simai::Policy::HybridModelData,
        ),
        ("policy_hybrid_dlrm.txt", simai::Policy::HybridDlrm),
        ("policy_micro.txt", simai::Policy::Micro),
    ] {
        let w = simai::parse(name, &text(&format!("parse/simai/{name}"))).unwrap();
        assert_eq!(w.header.policy, policy);
        assert_eq!(w.skipped_records, 0, "{name}");
        assert_eq!(w.records.len() as u64, w.declared_records, "{name}");
        assert!(w.diagnostics.iter().all(|d| !d.is_error()), "{name}");
    }
}
