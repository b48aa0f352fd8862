//! Reading a Chakra set once per program (`formats::chakra::reuse`): every
//! file of written multi-rank sets (ranks of one stage differ only in
//! their `pg_name`s and peers) parses exactly as the full parser reads it,
//! most of them as copies of an earlier file; files that differ in
//! anything else (a duration, a peer out of range) are parsed in full, with
//! the full parser's result and warnings. And simulated once per program
//! (`replay::chakra::chakra_job` with copies): a run whose ranks of a stage
//! all run the same program simulates one rank per stage and gives every
//! figure the simulation of every rank gives; a rank unlike its stage keeps
//! every rank simulated.

use prost::Message;
use trainscope_core::formats::chakra::reuse::ParseCache;
use trainscope_core::formats::chakra::schema::{GlobalMetadata, Node, NodeType, Value};
use trainscope_core::formats::chakra::{self, encode};

/// Parse `files` in order with one cache; each result must equal the full
/// parse. Returns the cache (its counts).
fn parse_all(files: &[(String, Vec<u8>)]) -> ParseCache {
    let mut cache = ParseCache::default();
    for (name, bytes) in files {
        let reused = cache.parse(name, bytes);
        let full = chakra::parse(name, bytes);
        assert_eq!(reused, full, "{name}");
    }
    cache
}

/// A file's metadata and nodes, decoded.
fn decode(bytes: &[u8]) -> (GlobalMetadata, Vec<Node>) {
    let mut buf = bytes;
    let meta = GlobalMetadata::decode_length_delimited(&mut buf).expect("metadata");
    let mut nodes = Vec::new();
    while !buf.is_empty() {
        nodes.push(Node::decode_length_delimited(&mut buf).expect("node"));
    }
    (meta, nodes)
}

#[test]
fn ranks_of_a_stage_are_read_as_copies_and_parse_exactly_as_in_full() {
    for (tp, dp, pp) in [(2, 2, 2), (2, 4, 2), (1, 4, 4)] {
        let (files, _, _) = trainscope_tests::chakra_written(tp, dp, pp, 8);
        let cache = parse_all(&files);
        // One full parse per stage program at most; every other rank a copy.
        assert!(
            cache.full <= u64::from(pp),
            "{tp} {dp} {pp}: {}",
            cache.full
        );
        assert_eq!(cache.copies + cache.full, files.len() as u64);
        // In reverse order too (the templates are whichever came first).
        let reversed: Vec<(String, Vec<u8>)> = files.iter().rev().cloned().collect();
        let cache = parse_all(&reversed);
        assert!(cache.full <= u64::from(pp));
    }
}

#[test]
fn files_that_differ_in_more_than_rank_ids_are_parsed_in_full() {
    let (mut files, _, _) = trainscope_tests::chakra_written(2, 2, 2, 8);
    // Rank 1: one compute node's duration changed (not a copy of rank 0).
    let (meta, mut nodes) = decode(&files[1].1);
    let comp = nodes
        .iter_mut()
        .find(|n| n.r#type == NodeType::CompNode as i32)
        .expect("a compute node");
    comp.duration_micros += 1;
    files[1].1 = encode(&meta, &nodes);
    // Rank 2: a send's peer out of range (the parser warns, replays it as
    // a no-op).
    let (meta, mut nodes) = decode(&files[2].1);
    let send = nodes
        .iter_mut()
        .find(|n| n.r#type == NodeType::CommSendNode as i32)
        .expect("a send");
    let dst = send
        .attr
        .iter_mut()
        .find(|a| a.name == "comm_dst")
        .expect("comm_dst");
    dst.value = Some(Value::Int32Val(-3));
    files[2].1 = encode(&meta, &nodes);
    let cache = parse_all(&files);
    let warned = chakra::parse(&files[2].0, &files[2].1);
    assert!(
        warned
            .diagnostics
            .iter()
            .any(|d| d.message.contains("comm_dst -3 out of range")),
        "{:?}",
        warned.diagnostics
    );
    // Ranks 0 and 4 (the two stages' first files), 1 and 2 were parsed
    // in full; ranks 3, 5, 6 and 7 are copies.
    assert_eq!((cache.full, cache.copies), (4, 4));
}

/// Ranks whose group names have other lengths than their template's
/// (`pg_name` "9" against "10") are read by value positions too, laid out
/// as an earlier copy: a layout is kept per length. Every file still
/// parses exactly as in full; a file laid out as a layout but differing in
/// any other byte (a compute node's duration, same length) is parsed in
/// full.
#[test]
fn copies_laid_out_as_an_earlier_copy_compare_by_value_positions() {
    let (files, _, _) = trainscope_tests::chakra_written(2, 16, 2, 16);
    let lengths: std::collections::BTreeSet<usize> = files.iter().map(|(_, b)| b.len()).collect();
    assert!(lengths.len() > 2, "{lengths:?}");
    let cache = parse_all(&files);
    assert_eq!((cache.full, cache.copies), (2, files.len() as u64 - 2));
    // Most copies compare by value positions: only the first file of each
    // length of each stage walks its node frames.
    let framed = cache.copies - cache.by_layout;
    assert!(
        cache.by_layout > framed && framed < lengths.len() as u64 * 2,
        "{} by layout, {framed} framed",
        cache.by_layout
    );
    // A file laid out as another (its length seen before, not its
    // template's) with one compute duration changed in place.
    let seen: Vec<usize> = files.iter().map(|(_, b)| b.len()).collect();
    let k = (2..files.len())
        .find(|&k| seen[..k].iter().filter(|&&l| l == seen[k]).count() >= 2 && seen[k] != seen[0])
        .expect("a file whose length two earlier files have");
    let (meta, mut nodes) = decode(&files[k].1);
    let comp = nodes
        .iter_mut()
        .find(|n| n.r#type == NodeType::CompNode as i32 && n.duration_micros % 128 != 127)
        .expect("a compute node");
    comp.duration_micros += 1;
    let mut changed = files.clone();
    changed[k].1 = encode(&meta, &nodes);
    assert_eq!(changed[k].1.len(), files[k].1.len());
    let cache_changed = parse_all(&changed);
    assert_eq!(cache_changed.full, cache.full + 1);
}

/// A written set with its groups file, loaded into its measured run.
fn loaded(tp: u32, dp: u32, pp: u32) -> trainscope_core::workload::MeasuredRun {
    let (files, groups, _) = trainscope_tests::chakra_written(tp, dp, pp, 8);
    let mut set: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    set.push(("comm_groups.json", groups.as_bytes()));
    let loaded = trainscope_core::inspect::load_set(&set, None, &Default::default());
    loaded.runs.into_iter().next().expect("one Chakra run")
}

#[test]
fn one_rank_per_stage_simulates_what_every_rank_gives() {
    use trainscope_core::engine::{simulate, SimConfig};
    use trainscope_core::replay::chakra::chakra_job;
    for (tp, dp, pp) in [(2, 2, 2), (2, 4, 2), (1, 4, 4)] {
        let run = loaded(tp, dp, pp);
        let (all, _) = chakra_job(&run, false).expect("job");
        let (copies, warnings) = chakra_job(&run, true).expect("job");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!all.job.stage_copies);
        assert!(copies.job.stage_copies, "{tp} {dp} {pp}");
        assert_eq!(all.job.programs.len() as u32, tp * dp * pp);
        assert_eq!(copies.job.programs.len() as u32, pp);
        let config = SimConfig::default();
        let a = simulate(&all.job, &config).expect("simulates").summary;
        let b = simulate(&copies.job, &config).expect("simulates").summary;
        assert!(b.representative_ranks && !a.representative_ranks);
        assert_eq!(b.simulated_ranks, pp);
        // Every figure equal but how it was simulated (events, tasks,
        // simulated ranks, the note saying so) and the per-rank rows, of
        // which the simulated ranks' equal the full run's.
        let strip = |s: &trainscope_core::engine::summary::Summary| {
            let mut v = serde_json::to_value(s).expect("json");
            let o = v.as_object_mut().expect("object");
            for k in [
                "events",
                "tasks",
                "simulated_ranks",
                "representative_ranks",
                "notes",
                "stages",
            ] {
                o.remove(k);
            }
            v
        };
        assert_eq!(strip(&a), strip(&b), "{tp} {dp} {pp}");
        assert!(a.iteration_time_ns > 0);
        for st in &b.stages {
            let full = a.stages.iter().find(|x| x.rank == st.rank).expect("rank");
            assert_eq!(full, st, "{tp} {dp} {pp}: rank {}", st.rank);
        }
    }
}

#[test]
fn a_rank_unlike_its_stage_keeps_every_rank_simulated() {
    use trainscope_core::replay::chakra::chakra_job;
    let mut run = loaded(2, 2, 2);
    // Rank 3's first compute op runs 1 ns longer: no longer a copy.
    let op = run.ranks[3]
        .ops
        .iter_mut()
        .find(|o| o.kind == trainscope_core::workload::OpKind::Compute)
        .expect("a compute op");
    op.duration_ns = op.duration_ns.map(|d| d + 1);
    let (rj, _) = chakra_job(&run, true).expect("job");
    assert!(!rj.job.stage_copies);
    assert_eq!(rj.job.programs.len(), 8);
}

#[test]
fn a_run_simulates_one_rank_per_stage_unless_a_rank_is_slowed() {
    use trainscope_core::engine::SimConfig;
    use trainscope_core::run::{run_files, RunOptions, SlowRank};
    let (files, groups, _) = trainscope_tests::chakra_written(2, 2, 2, 8);
    let plain = trainscope_tests::chakra_simulate(&files, Some(&groups)).expect("runs");
    let s = &plain.result.summary;
    assert_eq!((s.simulated_ranks, s.representative_ranks), (2, true));
    assert!(
        s.notes.iter().any(|n| n.contains("one rank per stage")),
        "{:?}",
        s.notes
    );
    // Rank 5 (stage 1, not its stage's first rank) slowed: every rank is
    // simulated, and it is slower than the plain run.
    let mut set: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    set.push(("comm_groups.json", groups.as_bytes()));
    let options = RunOptions {
        slow_rank: Some(SlowRank {
            rank: 5,
            percent: 50.0,
        }),
        ..RunOptions::default()
    };
    let slowed = run_files(&set, &SimConfig::default(), &options).expect("runs");
    let t = &slowed.result.summary;
    assert_eq!((t.simulated_ranks, t.representative_ranks), (8, false));
    assert!(t.iteration_time_ns > s.iteration_time_ns);
    let report = slowed.slow_rank.expect("the slowed-rank report");
    assert_eq!(report.baseline_iteration_time_ns, s.iteration_time_ns);
}

/// A set's run with copies sharing their program's ops
/// (`chakra::to_run_sharing` with `share`) and with every rank holding
/// its ops read the same, rank by rank and op by op, and give the same
/// replay jobs (one rank per stage and every rank) and measured timeline.
fn shared_equals_all_ranks(
    files: &[(String, Vec<u8>)],
    groups: &str,
    expect_shared: bool,
) -> trainscope_core::workload::MeasuredRun {
    use trainscope_core::replay::chakra::chakra_job;
    use trainscope_core::replay::measured::measured_timeline;
    let mut cache = ParseCache::default();
    let traces: Vec<chakra::ChakraTrace> = files.iter().map(|(n, b)| cache.parse(n, b)).collect();
    let groups = chakra::groups::parse("comm_groups.json", groups);
    let shared = chakra::to_run_sharing(&traces, Some(&groups), true);
    let all = chakra::to_run_sharing(&traces, Some(&groups), false);
    let copies = shared.ranks.iter().filter(|r| r.copy.is_some()).count();
    assert_eq!(copies > 0, expect_shared, "{copies} shared ranks");
    assert!(all.ranks.iter().all(|r| r.copy.is_none()));
    assert_eq!(shared.parallel, all.parallel);
    assert_eq!(shared.diagnostics, all.diagnostics);
    assert_eq!(shared.files, all.files);
    assert_eq!(shared.op_count(), all.op_count());
    assert_eq!(shared.ranks.len(), all.ranks.len());
    for (a, b) in shared.ranks.iter().zip(&all.ranks) {
        assert_eq!((a.rank, a.stage, &a.file), (b.rank, b.stage, &b.file));
        assert_eq!(shared.ops_of(a), all.ops_of(b), "rank {}", a.rank);
        let iterated: Vec<_> = shared.ops_iter(a).map(|o| o.into_owned()).collect();
        assert_eq!(iterated, b.ops, "rank {}", a.rank);
    }
    for copies in [true, false] {
        let (x, wx) = chakra_job(&shared, copies).expect("job");
        let (y, wy) = chakra_job(&all, copies).expect("job");
        assert_eq!(x.job, y.job);
        assert_eq!(wx, wy);
    }
    let tx = serde_json::to_value(measured_timeline(&shared)).expect("json");
    let ty = serde_json::to_value(measured_timeline(&all)).expect("json");
    assert!(tx == ty, "the measured timelines differ");
    shared
}

#[test]
fn ranks_sharing_their_program_read_as_every_rank_holding_its_ops() {
    for (tp, dp, pp) in [(2, 2, 2), (2, 4, 2), (1, 4, 4)] {
        let (files, groups, _) = trainscope_tests::chakra_written(tp, dp, pp, 8);
        let run = shared_equals_all_ranks(&files, &groups, true);
        // One program per stage; the other ranks share it.
        let held = run.ranks.iter().filter(|r| r.copy.is_none()).count();
        assert_eq!(held as u32, pp, "{tp} {dp} {pp}");
        // In reverse order (other files are the programs).
        let reversed: Vec<(String, Vec<u8>)> = files.iter().rev().cloned().collect();
        shared_equals_all_ranks(&reversed, &groups, true);
    }
    // Rank 5's file missing: rank 1 (a copy of rank 0's program) sends to
    // no file, so its sends are unmatched where rank 0's are matched: it
    // holds its own ops, the others still share.
    let (files, groups, _) = trainscope_tests::chakra_written(2, 2, 2, 8);
    let without: Vec<(String, Vec<u8>)> = files
        .iter()
        .filter(|(n, _)| !n.ends_with(".5.et"))
        .cloned()
        .collect();
    assert_eq!(without.len(), 7);
    let run = shared_equals_all_ranks(&without, &groups, true);
    let held: Vec<u32> = run
        .ranks
        .iter()
        .filter(|r| r.copy.is_none())
        .map(|r| r.rank)
        .collect();
    // Ranks 0 and 4 hold their stages' programs; rank 1 its own ops.
    assert_eq!(held, vec![0, 1, 4]);
}

#[test]
fn small_sets_hold_every_rank_s_ops() {
    let (files, groups, _) = trainscope_tests::chakra_written(2, 2, 2, 8);
    let mut cache = ParseCache::default();
    let traces: Vec<chakra::ChakraTrace> = files.iter().map(|(n, b)| cache.parse(n, b)).collect();
    let nodes: u64 = traces.iter().map(|t| t.node_count() as u64).sum();
    assert!(nodes < chakra::SHARE_PROGRAMS_MIN_NODES);
    let groups = chakra::groups::parse("comm_groups.json", &groups);
    let run = chakra::to_run(&traces, Some(&groups));
    assert!(run
        .ranks
        .iter()
        .all(|r| r.copy.is_none() && !r.ops.is_empty()));
    assert_eq!(run, chakra::to_run_sharing(&traces, Some(&groups), false));
}
