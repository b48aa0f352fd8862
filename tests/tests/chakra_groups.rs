//! Chakra round trip with process groups: a model-level job (Llama 3.2 1B,
//! TP 2 x DP 2 x PP 2, world 8) is written by the Chakra writer (one `.et`
//! per rank and `comm_groups.json`), read back with and without the groups
//! file, and simulated. With the groups the run is TP 2 x DP 2 x PP 2 and
//! every collective is re-costed over its group: the TP and DP collectives
//! of a rank take exactly the time the original simulation gave them.
//! Without the file every collective spans the 8 ranks (slower) and a
//! warning says to add the file. Also: detection and inspection of the
//! groups file (`chakra-comm-groups`), located errors of bad groups files
//! in a set, a file whose groups fit no Megatron layout, a pg_name the
//! file lacks, and a SimAI MoE workload (EP = DP) read back the same way.

use trainscope_core::engine::config::PlacementOrder;
use trainscope_core::engine::SimConfig;
use trainscope_core::inspect::{self, LoadOptions};
use trainscope_core::replay::chakra::write_timeline;
use trainscope_core::run::{run_files, RunError, RunOptions, RunOutput};
use trainscope_core::timeline::{LaneGroup, SpanKind, Timeline};
use trainscope_core::workload::Format;

/// The written files (`job.<rank>.et`), the groups JSON and the original
/// simulation's timeline (4 micro-batches per pipeline).
fn written(tp: u32, dp: u32, pp: u32) -> (Vec<(String, Vec<u8>)>, String, Timeline) {
    let (files, groups, run) = trainscope_tests::chakra_written(tp, dp, pp, 4 * dp);
    (files, groups, run.result.timeline)
}

fn simulate(files: &[(String, Vec<u8>)], groups: Option<&str>) -> RunOutput {
    trainscope_tests::chakra_simulate(files, groups).expect("simulates")
}

/// (collective, bytes, duration) of the collective spans of `kind` on the
/// lanes of `group` (a stage of an SPMD timeline, a rank of a per-rank
/// one), sorted.
fn colls(t: &Timeline, group: u32, kind: SpanKind) -> Vec<(String, u64, u64)> {
    let mut v = Vec::new();
    for (li, lane) in t.lanes().iter().enumerate() {
        let own = match lane.group_kind {
            LaneGroup::Rank => lane.group == group,
            _ => lane.stage == group,
        };
        if !own {
            continue;
        }
        for s in t.spans(li as u32) {
            if s.kind == kind {
                v.push((format!("{:?}", s.coll), s.bytes, s.duration_ns));
            }
        }
    }
    v.sort();
    v
}

#[test]
fn a_written_job_reads_back_with_its_groups() {
    let (files, groups, original) = written(2, 2, 2);
    assert_eq!(files.len(), 8);
    let with = simulate(&files, Some(&groups));
    let p = with.parallel;
    assert_eq!((p.tp, p.dp, p.pp, p.ep), (2, 2, 2, 1));
    assert!(
        !with.warnings.iter().any(|w| w.contains("process group")),
        "{:?}",
        with.warnings
    );
    assert!(with.files.iter().any(|f| f == "comm_groups.json"));
    let t = &with.result.timeline;
    // Rank 0 is stage 0, rank 4 stage 1 (TP fastest, then DP, then PP):
    // each rank's TP and DP collectives are the original stage's, over the
    // same 2 ranks, so they take the same time to the nanosecond (the
    // network cost depends on the collective, its group's size and
    // placement and the bytes; Chakra's all-gather comm_size is the full
    // size / 2, which the reader multiplies back by the group's 2 members).
    for (rank, stage) in [(0u32, 0u32), (4, 1)] {
        for kind in [SpanKind::CollTp, SpanKind::CollDp] {
            let want = colls(&original, stage, kind);
            assert!(!want.is_empty(), "{kind:?} on stage {stage}");
            assert_eq!(colls(t, rank, kind), want, "rank {rank} {kind:?}");
        }
    }
    // The tied-embedding all-reduce runs between the first and last stage.
    assert_eq!(
        colls(t, 0, SpanKind::CollOther),
        colls(&original, 0, SpanKind::CollOther)
    );
    assert!(!colls(t, 0, SpanKind::CollOther).is_empty());

    // Without the groups file: one DP group of all 8 ranks, every
    // collective slower than over its 2 ranks, and a warning with the fix.
    let without = simulate(&files, None);
    assert_eq!(without.parallel.dp, 8);
    assert!(colls(&without.result.timeline, 0, SpanKind::CollTp).is_empty());
    let all = colls(&without.result.timeline, 0, SpanKind::CollDp);
    let tp = colls(&original, 0, SpanKind::CollTp);
    let (_, bytes, dur) = tp.iter().max_by_key(|c| c.1).unwrap().clone();
    let same = all
        .iter()
        .find(|c| c.1 == bytes * 4 || c.1 == bytes)
        .expect("the TP collective, over 8 ranks");
    assert!(same.2 > dur, "{same:?} vs {dur}");
    assert!(
        without.warnings.iter().any(
            |w| w.contains("are simulated over all ranks") && w.contains("no comm_groups.json")
        ),
        "{:?}",
        without.warnings
    );
    // Over all ranks, stage 0's TP collectives before its first send would
    // wait for stage 1's, which come after its first receive: the replay
    // runs the collectives unsynchronised and says so.
    assert!(
        without
            .warnings
            .iter()
            .any(|w| w.contains("collectives are not synchronised across ranks")),
        "{:?}",
        without.warnings
    );
    assert!(
        with.result.summary.iteration_time_ns < without.result.summary.iteration_time_ns,
        "{} vs {}",
        with.result.summary.iteration_time_ns,
        without.result.summary.iteration_time_ns
    );
}

#[test]
fn without_pipeline_the_iteration_time_comes_back() {
    // TP 2 x DP 2 x PP 1: no point-to-point transfers, so the replay of the
    // written graphs meets the original iteration.
    let (files, groups, original) = written(2, 2, 1);
    let with = simulate(&files, Some(&groups));
    assert_eq!((with.parallel.tp, with.parallel.dp), (2, 2));
    let end = |t: &Timeline| {
        (0..t.lanes().len() as u32)
            .flat_map(|l| t.spans(l).iter().map(|s| s.start_ns + s.duration_ns))
            .max()
            .unwrap_or(0)
    };
    let (a, b) = (end(&original), end(&with.result.timeline));
    // Compute nodes are written in whole µs (`duration_micros`), each off
    // by at most 500 ns, and a rank runs its compute one node after the
    // other: the replay is within 500 ns per compute node of the original.
    let compute = (0..original.lanes().len() as u32)
        .flat_map(|l| original.spans(l).iter())
        .filter(|s| {
            matches!(
                s.kind,
                SpanKind::Forward | SpanKind::InputGrad | SpanKind::WeightGrad | SpanKind::Compute
            )
        })
        .count() as u64;
    let tol = 500 * compute;
    assert!(
        a.abs_diff(b) <= tol && tol < a / 100,
        "original {a} ns, replay {b} ns, {compute} compute spans"
    );
}

#[test]
fn the_groups_file_is_detected_and_summarised() {
    let (files, groups, _) = written(2, 2, 2);
    let mut set: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    set.push(("comm_groups.json", groups.as_bytes()));
    let loaded = inspect::load_set(&set, None, &LoadOptions::default());
    let s = loaded.summaries.last().unwrap();
    assert_eq!(s.format, Some(Format::ChakraCommGroups));
    assert_eq!(s.confidence, Some(100));
    assert_eq!(s.unit, "groups");
    // 4 TP, 4 DP and 4 embedding groups.
    assert_eq!(s.read, 12);
    assert!(s.is_usable(), "{:?}", s.diagnostics);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert_eq!(s.job.as_ref().unwrap().parallel.tp, 2);
    assert_eq!(loaded.runs.len(), 1);
    assert_eq!(loaded.runs[0].ranks.len(), 8);
    assert_eq!(loaded.runs[0].ranks[5].stage, Some(1));
}

#[test]
fn bad_groups_files_fail_the_set_with_located_errors() {
    let (files, _, _) = written(2, 2, 2);
    let load = |json: &str| {
        let mut set: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        set.push(("comm_groups.json", json.as_bytes()));
        match run_files(&set, &SimConfig::default(), &RunOptions::default()) {
            Err(RunError::Parse(ds)) => ds
                .iter()
                .map(|d| {
                    let l = d.location.as_ref().expect("located");
                    format!("{}:{}:{}: {}", l.file, l.line, l.column, d.message)
                })
                .collect::<Vec<_>>()
                .join("\n"),
            other => panic!("{:?}", other.map(|o| o.format)),
        }
    };
    // A rank outside the 8 files.
    let e = load("{\"1\": [0, 1],\n \"2\": [2, 9]}");
    assert!(
        e.contains("comm_groups.json:2:11:") && e.contains("rank 9"),
        "{e}"
    );
    // A rank given twice.
    let e = load("{\"1\": [0, 1, 1]}");
    assert!(
        e.contains("comm_groups.json:1:14:") && e.contains("twice"),
        "{e}"
    );
    // Not a list of integers.
    let e = load("{\"1\": [0, \"1\"]}");
    assert!(e.contains("comm_groups.json:1:11:"), "{e}");
    // A groups file alone has nothing to simulate.
    let only = match run_files(
        &[("comm_groups.json", b"{\"1\": [0, 1]}".as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    ) {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    assert!(only.contains("none is given"), "{only}");
}

#[test]
fn groups_that_fit_no_layout_fall_back_with_a_warning() {
    let (files, _, _) = written(2, 2, 2);
    // Group 1 is {0, 3}: no TP, DP or first/last-stage group of any layout
    // of 8 ranks; the writer's groups 2.. are missing.
    let json = "{\"1\": [0, 3], \"2\": [2, 3], \"3\": [4, 5], \"4\": [6, 7]}";
    let out = simulate(&files, Some(json));
    assert_eq!(out.parallel.dp, 8);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("group `1` (ranks 0, 3)") && w.contains("one data-parallel group")),
        "{:?}",
        out.warnings
    );
}

#[test]
fn a_simai_workload_with_experts_reads_back_with_its_groups() {
    // TP 2 x EP 2 x PP 2 x DP 2 (world 8): EP = DP, told apart from a DP 4
    // layout by the files' point-to-point partners.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/parse/simai/ep_types.txt"
    );
    let text = std::fs::read(path).unwrap();
    let original = run_files(
        &[("ep_types.txt", text.as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .unwrap();
    let ex = write_timeline(
        &original.result.timeline,
        original.parallel,
        PlacementOrder::default(),
    );
    let files: Vec<(String, Vec<u8>)> = ex
        .files()
        .into_iter()
        .map(|(i, _, b)| (format!("moe.{i}.et"), b))
        .collect();
    let groups = ex.comm_groups_json().expect("groups");
    let back = simulate(&files, Some(&groups));
    let p = back.parallel;
    assert_eq!((p.tp, p.dp, p.pp, p.ep), (2, 2, 2, 2));
    // Every collective of rank 0 takes the time the original gave it.
    assert!(!colls(&original.result.timeline, 0, SpanKind::CollEp).is_empty());
    for kind in [
        SpanKind::CollTp,
        SpanKind::CollEp,
        SpanKind::CollDp,
        SpanKind::CollDpEp,
        SpanKind::CollOther,
    ] {
        let want = colls(&original.result.timeline, 0, kind);
        assert_eq!(colls(&back.result.timeline, 0, kind), want, "{kind:?}");
    }
}

#[test]
fn a_pg_name_the_groups_file_lacks_is_named() {
    // TP 2 x DP 2: the file keeps the DP groups only. The TP collectives'
    // pg_names have no entry (over all ranks, ASTRA-sim's default group),
    // and TP 2 x DP 2 has no group of all 4 ranks: one DP group of all.
    let (files, groups, _) = written(2, 2, 1);
    let v: serde_json::Value = serde_json::from_str(&groups).unwrap();
    let dp: serde_json::Map<String, serde_json::Value> = v
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, m)| {
            let r: Vec<u64> = m
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            r[1] - r[0] == 2
        })
        .map(|(k, m)| (k.clone(), m.clone()))
        .collect();
    assert_eq!(dp.len(), 2, "{groups}");
    let out = simulate(&files, Some(&serde_json::Value::Object(dp).to_string()));
    assert_eq!(out.parallel.dp, 4);
    for needle in [
        "have no group in `comm_groups.json`: simulated over all ranks",
        "are no group of the layout TP 2 x DP 2 x PP 1",
    ] {
        assert!(
            out.warnings.iter().any(|w| w.contains(needle)),
            "{needle}: {:?}",
            out.warnings
        );
    }
}
