//! PyTorch profiler (Kineto) traces: detection (plain and gzip'd), the
//! hand-written fixtures of `tests/fixtures/kineto/` as snapshots (a 2-rank
//! job with one gzip'd file, a truncated gzip, a trace without
//! `distributedInfo`, a set missing a rank), and the generated multi-rank
//! jobs of `trainscope_tests::kineto_gen` checked against the facts the
//! generator used (kernels, collectives, step spans, exact ns).

use trainscope_core::inspect::{inspect, inspect_set, load_set, to_json, FileSummary, LoadOptions};
use trainscope_core::workload::{CommGroup, CommKind, OpKind};
use trainscope_core::{
    formats::{self, kineto},
    workload::Format,
};
use trainscope_tests::kineto_gen::KinetoJob;
use trainscope_tests::{fixture_bytes, FixtureSet};

fn render(summaries: &[FileSummary]) -> String {
    let json = serde_json::to_string_pretty(&to_json(summaries)).unwrap();
    let rendered: String = summaries
        .iter()
        .flat_map(|s| s.diagnostics.iter().map(|d| d.render()))
        .collect();
    format!("{json}\n--- rendered diagnostics ---\n{rendered}")
}

fn set(rels: &[&str]) -> Vec<FileSummary> {
    let fx = FixtureSet::read(rels);
    let files = fx.files();
    inspect_set(&files, None)
}

#[test]
fn job_of_two_ranks_one_gzipped() {
    let s = set(&[
        "kineto/job2_rank0.json",
        "kineto/job2_rank1.pt.trace.json.gz",
    ]);
    insta::assert_snapshot!("kineto_job2", render(&s));
    for f in &s {
        assert!(f.usable, "{}", f.file);
        assert_eq!(f.format, Some(Format::KinetoTrace));
        let k = f.kineto.as_ref().unwrap();
        assert_eq!(k.iterations, vec![7, 8]);
        assert_eq!(k.iteration, Some(8));
        assert_eq!((k.kernels, k.collectives, k.memcpy, k.memset), (6, 2, 2, 2));
        assert_eq!(k.world, Some(2));
    }
    assert!(s[1].kineto.as_ref().unwrap().gzip);
    assert_eq!(s[0].ranks, Some(vec![0, 1]));
    // Step 8 spans 1001000 .. 1001900.5 us on both ranks.
    assert_eq!(s[0].iteration_times_ns, Some(vec![900_500]));
}

#[test]
fn run_holds_the_chosen_step_with_collectives() {
    let rels = [
        "kineto/job2_rank0.json",
        "kineto/job2_rank1.pt.trace.json.gz",
    ];
    let fx = FixtureSet::read(&rels);
    let files = fx.files();
    let mut opts = LoadOptions::default();
    opts.kineto.iteration = Some(7);
    let loaded = load_set(&files, None, &opts);
    let run = &loaded.runs[0];
    assert_eq!(run.format, Format::KinetoTrace);
    assert_eq!(run.iterations[0].index, 7);
    let r1 = run.rank(1).unwrap();
    assert_eq!(r1.ops.len(), 6);
    let ar = r1
        .ops
        .iter()
        .find(|o| matches!(o.kind, OpKind::Collective { .. }))
        .unwrap();
    assert_eq!(
        ar.kind,
        OpKind::Collective {
            collective: CommKind::AllReduce,
            group: CommGroup::Dp
        }
    );
    // Joined to record_param_comms by External id: 1 Mi bf16 elements.
    assert_eq!(ar.message_bytes, Some(2 << 20));
    assert_eq!(ar.stream, Some(20));
    assert_eq!(
        (ar.start_ns, ar.duration_ns),
        (Some(1_000_450_000), Some(250_000))
    );
    // An asked-for step that does not exist falls back with a warning.
    opts.kineto.iteration = Some(99);
    let loaded = load_set(&files, None, &opts);
    assert_eq!(loaded.runs[0].iterations[0].index, 8);
    assert!(loaded.summaries[0]
        .warnings()
        .iter()
        .any(|w| w.contains("iteration 99")));
}

#[test]
fn missing_rank_truncated_gzip_and_no_distributed_info() {
    // One rank of two: analysed as that rank, and said so.
    let s = set(&["kineto/job2_rank0.json"]);
    insta::assert_snapshot!("kineto_missing_rank", render(&s));
    assert!(s[0].usable);
    assert!(s[0]
        .warnings()
        .iter()
        .any(|w| w.contains("the set holds 1 of 2 ranks")));

    let s = set(&["kineto/truncated.json.gz"]);
    insta::assert_snapshot!("kineto_truncated_gzip", render(&s));
    assert!(s[0].errors().iter().any(|e| e.contains("gzip stream")));

    let s = set(&["kineto/no_distributed_info.json"]);
    insta::assert_snapshot!("kineto_no_distributed_info", render(&s));
    let json = to_json(&s);
    assert!(json[0]["world"].is_null(), "{json}");
    assert!(json[0]["rank"].is_null(), "{json}");
    assert!(s[0]
        .warnings()
        .iter()
        .any(|w| w.contains("has no `distributedInfo`")));
    assert!(s[0].usable);
}

#[test]
fn detection_by_content_plain_and_gzip() {
    let text = String::from_utf8(fixture_bytes("kineto/job2_rank0.json")).unwrap();
    let d = formats::detect_with_confidence("x", &text).unwrap();
    assert_eq!((d.format, d.confidence), (Format::KinetoTrace, 100));
    let gz = fixture_bytes("kineto/job2_rank1.pt.trace.json.gz");
    assert!(kineto::is_gzip(&gz));
    let s = inspect("whatever.bin", &gz, None);
    assert_eq!(s.format, Some(Format::KinetoTrace));
    // A HuggingFace config is not taken for a trace, nor a trace for one.
    let hf = String::from_utf8(fixture_bytes("hf/gpt2.json")).unwrap();
    assert!(formats::detect_all(&hf)
        .iter()
        .all(|d| d.format != Format::KinetoTrace));
    assert_eq!(Format::from_name("kineto-trace"), Some(Format::KinetoTrace));
}

#[test]
fn generated_job_matches_the_generator_facts() {
    for job in [
        KinetoJob::default(),
        KinetoJob {
            seed: 9,
            world: 8,
            layers: 6,
            bucket_layers: 3,
            slow_rank: Some((5, 25)),
            args_on_kernel: false,
            ..KinetoJob::default()
        },
    ] {
        let files = job.generate();
        let expected = job.expected();
        let pairs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_bytes()))
            .collect();
        let loaded = load_set(&pairs, None, &LoadOptions::default());
        let run = &loaded.runs[0];
        let last = job.first_step + job.steps - 1;
        assert_eq!(run.iterations[0].index, last);
        assert_eq!(run.ranks.len() as u32, job.world);
        for (r, rt) in run.ranks.iter().enumerate() {
            let f = expected[r].last().unwrap();
            assert_eq!(rt.iterations[0].start_ns, f.start_ns);
            assert_eq!(rt.iterations[0].end_ns, f.end_ns);
            let colls: Vec<_> = rt
                .ops
                .iter()
                .filter(|o| matches!(o.kind, OpKind::Collective { .. }))
                .collect();
            assert_eq!(colls.len() as u64, f.collectives, "rank {r}");
            assert!(colls.iter().all(|c| c.message_bytes.is_some()));
            let comm: u64 = colls.iter().filter_map(|c| c.duration_ns).sum();
            assert_eq!(comm, f.comm_ns, "rank {r}");
            let compute: u64 = rt
                .ops
                .iter()
                .filter(|o| o.kind == OpKind::Compute && o.detail.is_none())
                .filter_map(|o| o.duration_ns)
                .sum();
            assert_eq!(compute, f.compute_ns, "rank {r}");
            let s = &loaded.summaries[r];
            assert!(s.errors().is_empty(), "{:?}", s.errors());
            assert_eq!(
                s.kineto.as_ref().unwrap().iterations,
                (job.first_step..=last).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn a_trace_without_gpu_work_fails_and_says_why() {
    let text = br#"{"schemaVersion": 1, "traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2.25},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
]}"#;
    let s = inspect("cpu_only.json", text, None);
    assert_eq!(s.format, Some(Format::KinetoTrace));
    assert!(!s.usable);
    assert!(s
        .errors()
        .iter()
        .any(|e| e.contains("no GPU kernel, memcpy or memset")));
}
