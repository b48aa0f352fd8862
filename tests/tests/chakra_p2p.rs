//! Chakra point-to-point transfers (sends matched with receives): a
//! pipelined model-level job (Llama 3.2 1B, PP 4, 1F1B, 8 micro-batches)
//! written by trainscope's Chakra writer is read back and simulated: every
//! send is matched with its receive, the stages wait for each other's
//! activations and gradients again (each stage's bubble comes back), and
//! the iteration is the original's. Also: the matching rules (per ordered
//! pair of ranks and tag, in file order; unmatched nodes named and run as
//! 0-ns no-ops), a receive's dependents waiting for the transfer priced
//! over the link between the two ranks, and transfers that wait on each
//! other named as a stall.

use trainscope_core::engine::summary::Summary;
use trainscope_core::engine::SimConfig;
use trainscope_core::formats::chakra::schema::{
    AttributeProto, GlobalMetadata, Node, NodeType, Value,
};
use trainscope_core::formats::chakra::{self, encode};
use trainscope_core::run::{run_files, RunError, RunOptions, RunOutput};
use trainscope_core::timeline::{SpanKind, Timeline};
use trainscope_core::workload::OpKind;

/// The written files (`job.<rank>.et`), the groups JSON and the original
/// simulation's summary and timeline (TP 1, DP 1, 8 micro-batches).
fn written(pp: u32) -> (Vec<(String, Vec<u8>)>, String, Summary, Timeline) {
    let (files, groups, run) = trainscope_tests::chakra_written(1, 1, pp, 8);
    (files, groups, run.result.summary, run.result.timeline)
}

fn simulate(files: &[(String, Vec<u8>)], groups: Option<&str>) -> Result<RunOutput, RunError> {
    trainscope_tests::chakra_simulate(files, groups)
}

fn spans(t: &Timeline, kind: SpanKind) -> Vec<(u32, u64, u64)> {
    (0..t.lanes().len() as u32)
        .flat_map(|l| {
            let group = t.lanes()[l as usize].group;
            t.spans(l)
                .iter()
                .filter(move |s| s.kind == kind)
                .map(move |s| (group, s.start_ns, s.duration_ns))
        })
        .collect()
}

#[test]
fn a_pipelined_job_reads_back_with_its_bubble() {
    let (files, groups, original, original_t) = written(4);
    assert_eq!(original.micro_batches, 8);
    assert_eq!(original.schedule, "1f1b");
    let back = simulate(&files, Some(&groups)).expect("simulates");
    assert!(
        !back.warnings.iter().any(|w| w.contains("not matched")),
        "{:?}",
        back.warnings
    );
    let s = &back.result.summary;
    assert_eq!(back.parallel.pp, 4);
    // Every stage-to-stage transfer comes back, with its bytes.
    let sends = |t: &Timeline| {
        let mut v: Vec<u64> = (0..t.lanes().len() as u32)
            .flat_map(|l| t.spans(l).iter())
            .filter(|s| s.kind == SpanKind::Send)
            .map(|s| s.bytes)
            .collect();
        v.sort_unstable();
        v
    };
    assert_eq!(sends(&back.result.timeline).len(), 2 * 8 * 3);
    assert_eq!(sends(&back.result.timeline), sends(&original_t));
    // The iteration: 66.35 ms originally; 57.18 ms when the sends and
    // receives were skipped (stages 1 and 2 never waited). Compute nodes
    // are written in whole µs (each off by at most 500 ns) and transfers
    // and collectives are re-costed exactly, so the replay is within
    // 0.1 % (it is 17 µs, 0.03 %, short).
    let (a, b) = (original.iteration_time_ns, s.iteration_time_ns);
    assert!(
        a.abs_diff(b) <= a / 1000,
        "original {a} ns, read back {b} ns"
    );
    // Each stage's bubble comes back: the stages wait on each other.
    for st in &s.stages {
        let o = original
            .stages
            .iter()
            .find(|o| o.stage == st.stage)
            .unwrap();
        assert!(
            o.bubble_ns > a / 10 || st.stage == 3,
            "stage {} {}",
            st.stage,
            o.bubble_ns
        );
        assert!(
            st.bubble_ns.abs_diff(o.bubble_ns) <= a / 1000,
            "stage {}: original bubble {} ns, read back {} ns",
            st.stage,
            o.bubble_ns,
            st.bubble_ns
        );
    }
    // Stage s starts its first forward only after stage s - 1's forward
    // and the activation's transfer.
    let fwd = spans(&back.result.timeline, SpanKind::Forward);
    let first = |rank: u32| {
        fwd.iter()
            .filter(|(g, _, _)| *g == rank)
            .map(|(_, st, _)| *st)
            .min()
            .unwrap()
    };
    for rank in 1..4 {
        assert!(first(rank) > first(rank - 1), "rank {rank}");
    }
    // Without comm_groups.json (one group of all ranks, every rank on
    // stage 0) the transfers still make the middle stages wait.
    let without = simulate(&files, None).expect("simulates");
    let ws = &without.result.summary;
    for st in ws.stages.iter().filter(|st| st.rank == 1 || st.rank == 2) {
        assert!(st.bubble_ns > a / 10, "rank {}: {}", st.rank, st.bubble_ns);
    }
}

fn attr(name: &str, value: Value) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(value),
    }
}

fn comp(id: u64, deps: &[u64], us: u64) -> Node {
    Node {
        id,
        name: format!("c{id}"),
        r#type: NodeType::CompNode as i32,
        ctrl_deps: Vec::new(),
        data_deps: deps.to_vec(),
        start_time_micros: 0,
        duration_micros: us,
        inputs: None,
        outputs: None,
        attr: Vec::new(),
    }
}

/// A send (`send`) or receive of `size` bytes with `peer` and `tag`.
fn p2p(id: u64, send: bool, peer: i32, tag: i32, size: i64, deps: &[u64]) -> Node {
    let mut n = comp(id, deps, 0);
    n.name = format!("{}{id}", if send { "send" } else { "recv" });
    n.r#type = if send {
        NodeType::CommSendNode
    } else {
        NodeType::CommRecvNode
    } as i32;
    n.attr = vec![
        attr(
            if send { "comm_dst" } else { "comm_src" },
            Value::Int32Val(peer),
        ),
        attr("comm_size", Value::Int64Val(size)),
        attr("comm_tag", Value::Int32Val(tag)),
    ];
    n
}

fn file(nodes: &[Node]) -> Vec<u8> {
    encode(
        &GlobalMetadata {
            version: "0.0.4".to_string(),
            attr: Vec::new(),
        },
        nodes,
    )
}

#[test]
fn sends_match_receives_by_pair_tag_and_order() {
    // Rank 0 sends to rank 1: tag 1 twice (100 then 200 bytes), tag 2
    // (50 bytes), tag 3 (no receive), one to rank 5 (no file) and one of
    // 64 bytes that rank 1 receives as 32. Rank 1 lists its receives in
    // another order, and one with tag 9 that nobody sends.
    let r0 = file(&[
        p2p(0, true, 1, 1, 100, &[]),
        p2p(1, true, 1, 1, 200, &[]),
        p2p(2, true, 1, 2, 50, &[]),
        p2p(3, true, 1, 3, 10, &[]),
        p2p(4, true, 5, 1, 10, &[]),
        p2p(5, true, 1, 4, 64, &[]),
    ]);
    let r1 = file(&[
        p2p(10, false, 0, 2, 50, &[]),
        p2p(11, false, 0, 1, 100, &[]),
        p2p(12, false, 0, 1, 200, &[]),
        p2p(13, false, 0, 9, 10, &[]),
        p2p(14, false, 0, 4, 32, &[]),
        comp(15, &[12], 5),
    ]);
    let traces = [chakra::parse("m.0.et", &r0), chakra::parse("m.1.et", &r1)];
    let run = chakra::to_run(&traces, None);
    let op = |rank: usize, name: &str| {
        run.ranks[rank]
            .ops
            .iter()
            .find(|o| o.name == name)
            .unwrap()
            .clone()
    };
    // Matched: the k-th send of a pair and tag with the k-th receive.
    for (s, r) in [
        ("send0", "recv11"),
        ("send1", "recv12"),
        ("send2", "recv10"),
    ] {
        let (s, r) = (op(0, s), op(1, r));
        assert_eq!(s.kind, OpKind::Send);
        assert_eq!(r.kind, OpKind::Recv);
        assert!(s.transfer.is_some());
        assert_eq!(s.transfer, r.transfer);
        assert_eq!(s.message_bytes, r.message_bytes);
    }
    // The compute after the second tag-1 receive waits for it.
    let c = op(1, "c15");
    let waited: Vec<&str> = c
        .waits_for
        .iter()
        .map(|i| run.ranks[1].ops[*i as usize].name.as_str())
        .collect();
    assert_eq!(waited, vec!["recv12"]);
    // Unmatched: 0-ns no-ops, each named with its node and rank.
    for (rank, name) in [
        (0, "send3"),
        (0, "send4"),
        (0, "send5"),
        (1, "recv13"),
        (1, "recv14"),
    ] {
        let o = op(rank, name);
        assert_eq!(
            (o.kind, o.duration_ns, o.transfer),
            (OpKind::Compute, Some(0), None),
            "{name}"
        );
    }
    let all: Vec<String> = run.diagnostics.iter().map(|d| d.short()).collect();
    let all = all.join("\n");
    for needle in [
        "send node 3 of rank 0 is not matched (rank 1 has no receive from rank 0 with tag 3 for it)",
        "send node 4 of rank 0 is not matched (rank 5 has no file in the set)",
        "send node 5 of rank 0 is not matched (its receive (node 14 of rank 1, tag 4) has comm_size 32 bytes, the send 64)",
        "receive node 13 of rank 1 is not matched (rank 0 has no send to rank 1 with tag 9 for it)",
        "receive node 14 of rank 1 is not matched (its send (node 5 of rank 0, tag 4) has comm_size 64 bytes, the receive 32)",
    ] {
        assert!(all.contains(needle), "{needle}\n{all}");
    }
    assert!(run.diagnostics.iter().all(|d| !d.is_error()), "{all}");
    // The set simulates, the unmatched nodes as no-ops.
    let out = run_files(
        &[("m.0.et", r0.as_slice()), ("m.1.et", r1.as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .expect("simulates");
    assert_eq!(spans(&out.result.timeline, SpanKind::Send).len(), 3);
    assert_eq!(spans(&out.result.timeline, SpanKind::Recv).len(), 3);
}

#[test]
fn a_receive_s_dependents_wait_for_the_transfer() {
    // Rank 0 computes 100 µs and sends 64 MiB to rank 1 (same node:
    // NVLink); rank 1 receives it and computes 50 µs on it, and 30 µs
    // independently of it first.
    let size = 64 << 20;
    let r0 = file(&[comp(0, &[], 100), p2p(1, true, 1, 0, size, &[0])]);
    let r1 = file(&[
        p2p(0, false, 0, 0, size, &[]),
        comp(1, &[], 30),
        comp(2, &[0], 50),
    ]);
    let out = run_files(
        &[("w.0.et", r0.as_slice()), ("w.1.et", r1.as_slice())],
        &SimConfig::default(),
        &RunOptions::default(),
    )
    .expect("simulates");
    let t = &out.result.timeline;
    let send = spans(t, SpanKind::Send);
    assert_eq!(send.len(), 1);
    let (_, s_start, s_dur) = send[0];
    // The transfer starts when rank 0's compute ends and takes the
    // point-to-point time of 64 MiB over NVLink (well above 0).
    assert_eq!(s_start, 100_000);
    assert!(s_dur > 10_000, "{s_dur}");
    let mut computes: Vec<(u32, u64, u64)> = spans(t, SpanKind::Forward);
    computes.extend(spans(t, SpanKind::Compute));
    let mut on1: Vec<(u64, u64)> = computes
        .iter()
        .filter(|(g, _, _)| *g == 1)
        .map(|(_, s, d)| (*s, *d))
        .collect();
    on1.sort_unstable();
    // 30 µs at once, then the 50 µs after the transfer ended.
    assert_eq!(on1, vec![(0, 30_000), (s_start + s_dur, 50_000)]);
    assert_eq!(
        out.result.summary.iteration_time_ns,
        s_start + s_dur + 50_000
    );
}

#[test]
fn transfers_that_wait_on_each_other_are_named() {
    // Each rank sends only after its receive from the other.
    let a = file(&[p2p(0, false, 1, 0, 8, &[]), p2p(1, true, 1, 0, 8, &[0])]);
    let b = file(&[p2p(0, false, 0, 0, 8, &[]), p2p(1, true, 0, 0, 8, &[0])]);
    let e = simulate(
        &[("d.0.et".to_string(), a), ("d.1.et".to_string(), b)],
        None,
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        e.contains("point-to-point transfers wait on each other")
            && e.contains("rank 0 waits for `send1` from rank 1 to rank 0"),
        "{e}"
    );
}

#[test]
fn a_warning_of_every_file_of_a_set_is_said_once() {
    // 8 rank files, each with a metadata node trainscope skips: one line
    // naming the files, not 8.
    let bytes: Vec<(String, Vec<u8>)> = (0..8)
        .map(|r| {
            let mut meta = comp(0, &[], 0);
            meta.r#type = NodeType::MetadataNode as i32;
            (format!("s.{r}.et"), file(&[meta, comp(1, &[], 10)]))
        })
        .collect();
    let out = simulate(&bytes, None).expect("simulates");
    let lines: Vec<&String> = out
        .warnings
        .iter()
        .filter(|w| w.contains("METADATA_NODE"))
        .collect();
    assert_eq!(
        lines,
        vec!["warning: `s.0.et`, `s.1.et`, ... `s.7.et` (8 files): 1 METADATA_NODE node(s) skipped (trainscope replays compute, collective, send and receive nodes; memory and metadata nodes are not simulated)"],
        "{:?}",
        out.warnings
    );
    let skipped: Vec<&String> = out
        .warnings
        .iter()
        .filter(|w| w.contains("nodes skipped") || w.contains("node skipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "{:?}", out.warnings);
}
