//! Chakra execution traces (format `chakra-et`): the committed 2-rank
//! fixture `tests/fixtures/chakra/job.<rank>.et` is made by
//! [`fixture_bytes`] with the vendored schema's messages (regenerate with
//! `UPDATE_CHAKRA_FIXTURE=1 cargo test -p trainscope-tests --test
//! parse_chakra`; the test fails when the committed bytes differ), then:
//! detection on bytes, the kept nodes in topological order, warnings for
//! the nodes trainscope does not simulate, located errors (cut file,
//! missing / float attributes, duplicate ids, cycles), and a simulation.

use std::path::PathBuf;
use trainscope_core::formats::chakra::schema::{
    AttributeProto, CollectiveCommType, GlobalMetadata, Node, NodeType, Value,
};
use trainscope_core::formats::chakra::{self, encode, NodeWork};
use trainscope_core::inspect;
use trainscope_core::workload::CommKind;
use trainscope_core::workload::Format;

fn attr(name: &str, value: Value) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(value),
    }
}

fn node(id: u64, name: &str, ty: NodeType, data: &[u64], dur_us: u64) -> Node {
    Node {
        id,
        name: name.to_string(),
        r#type: ty as i32,
        ctrl_deps: Vec::new(),
        data_deps: data.to_vec(),
        start_time_micros: 0,
        duration_micros: dur_us,
        inputs: None,
        outputs: None,
        attr: Vec::new(),
    }
}

fn coll(id: u64, name: &str, ty: CollectiveCommType, size: Value, data: &[u64]) -> Node {
    let mut n = node(id, name, NodeType::CommCollNode, data, 0);
    n.attr = vec![
        attr("comm_type", Value::Int64Val(ty as i64)),
        attr("comm_size", size),
        attr("is_cpu_op", Value::BoolVal(false)),
    ];
    n
}

fn meta() -> GlobalMetadata {
    GlobalMetadata {
        version: "0.0.4".to_string(),
        attr: Vec::new(),
    }
}

/// The nodes of rank `rank` of the fixture, in file order. Node 8 (`pre`)
/// comes last in the file but runs first (node 1 depends on it); node 4
/// waits on node 3 by a control dependency; nodes 0 (metadata) and 5 (a
/// REDUCE, not simulated) are skipped with warnings; node 6 is rank 0's
/// send to rank 1 and rank 1's receive of it (tag 0, 1 KiB); node 9 is
/// priced by num_ops only.
fn fixture_nodes(rank: u32) -> Vec<Node> {
    let fwd_us = if rank == 0 { 100 } else { 150 };
    let mut ag = coll(
        4,
        "param_allgather",
        CollectiveCommType::AllGather,
        Value::Uint64Val(4096),
        &[],
    );
    ag.ctrl_deps = vec![3];
    let mut p2p = if rank == 0 {
        node(6, "send", NodeType::CommSendNode, &[4], 0)
    } else {
        node(6, "recv", NodeType::CommRecvNode, &[4], 0)
    };
    p2p.attr = vec![
        attr(
            if rank == 0 { "comm_dst" } else { "comm_src" },
            Value::Int32Val(1 - rank as i32),
        ),
        attr("comm_size", Value::Int64Val(1024)),
        attr("comm_tag", Value::Int32Val(0)),
    ];
    let mut roofline = node(9, "roofline_op", NodeType::CompNode, &[7], 0);
    roofline.attr = vec![
        attr("num_ops", Value::Int64Val(1_000_000)),
        attr("tensor_size", Value::Uint64Val(4096)),
    ];
    vec![
        node(0, "meta", NodeType::MetadataNode, &[], 0),
        node(1, "forward", NodeType::CompNode, &[8], fwd_us),
        coll(
            2,
            "grad_allreduce",
            CollectiveCommType::AllReduce,
            Value::Int64Val(1 << 20),
            &[1],
        ),
        node(3, "optimizer", NodeType::CompNode, &[2], 50),
        ag,
        coll(
            5,
            "reduce",
            CollectiveCommType::Reduce,
            Value::Int64Val(64),
            &[4],
        ),
        p2p,
        node(7, "tail", NodeType::CompNode, &[4], 20),
        node(8, "pre", NodeType::CompNode, &[], 10),
        roofline,
    ]
}

fn fixture_bytes(rank: u32) -> Vec<u8> {
    encode(&meta(), &fixture_nodes(rank))
}

fn fixture_path(rank: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/chakra/job.{rank}.et"))
}

#[test]
fn committed_fixture_is_the_one_this_test_makes() {
    for rank in 0..2 {
        let made = fixture_bytes(rank);
        let path = fixture_path(rank);
        if std::env::var_os("UPDATE_CHAKRA_FIXTURE").is_some() {
            std::fs::write(&path, &made).unwrap();
        }
        let committed = std::fs::read(&path).expect("the committed fixture");
        assert_eq!(
            committed,
            made,
            "{} differs from fixture_bytes({rank})",
            path.display()
        );
    }
}

#[test]
fn detected_from_bytes_and_summarised() {
    let b0 = fixture_bytes(0);
    let b1 = fixture_bytes(1);
    let (c, _) = chakra::looks_like(&b0).expect("detected");
    assert_eq!(c, 100);
    let set = inspect::load_set(
        &[("job.0.et", &b0), ("job.1.et", &b1)],
        None,
        &inspect::LoadOptions::default(),
    );
    for (i, s) in set.summaries.iter().enumerate() {
        assert_eq!(s.format, Some(Format::ChakraEt));
        assert_eq!(s.unit, "nodes");
        assert_eq!(s.read, 8, "{:?}", s.diagnostics);
        assert_eq!(s.skipped, 2);
        assert!(s.usable);
        assert_eq!(s.file_ranks, Some(vec![i as u32]));
    }
    assert_eq!(set.runs.len(), 1);
    assert_eq!(set.runs[0].parallel.world, 2);
    // Text inputs never look like Chakra.
    for text in [
        &b"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8"[..],
        br#"{"schemaVersion": 1, "traceEvents": []}"#,
        b"",
        b"\x05\x0a\x03abc",
    ] {
        assert!(chakra::looks_like(text).is_none());
    }
}

#[test]
fn kept_nodes_in_topological_order_with_warnings_for_the_rest() {
    let t = chakra::parse("job.1.et", &fixture_bytes(1));
    assert_eq!(t.rank, Some(1));
    assert_eq!(t.version, "0.0.4");
    assert_eq!(t.nodes_read, 10);
    let got: Vec<(u64, NodeWork, u64, u64)> = t
        .nodes
        .iter()
        .map(|n| (n.id, n.work, n.duration_ns, n.size_bytes))
        .collect();
    assert_eq!(
        got,
        vec![
            (8, NodeWork::Compute, 10_000, 0),
            (1, NodeWork::Compute, 150_000, 0),
            (2, NodeWork::Collective(CommKind::AllReduce), 0, 1 << 20),
            (3, NodeWork::Compute, 50_000, 0),
            (4, NodeWork::Collective(CommKind::AllGather), 0, 4096),
            (6, NodeWork::Recv { peer: 0, tag: 0 }, 0, 1024),
            (7, NodeWork::Compute, 20_000, 0),
            (9, NodeWork::Compute, 0, 0),
        ]
    );
    assert_eq!(t.nodes[4].deps, vec![3]);
    let text: Vec<String> = t.diagnostics.iter().map(|d| d.short()).collect();
    let all = text.join("\n");
    assert!(all.contains("collective node 5 is REDUCE"), "{all}");
    assert!(!all.contains("COMM_RECV_NODE"), "{all}");
    assert!(all.contains("1 METADATA_NODE node(s) skipped"), "{all}");
    assert!(
        all.contains("1 compute node(s) (ids 9) have no duration_micros, only num_ops"),
        "{all}"
    );
    assert!(
        all.contains("collective node 4 has comm_size in another integer encoding than int64"),
        "{all}"
    );
    assert!(t.diagnostics.iter().all(|d| !d.is_error()), "{all}");
}

fn errors_of(nodes: Vec<Node>) -> (chakra::ChakraTrace, String) {
    let t = chakra::parse("bad.0.et", &encode(&meta(), &nodes));
    let all: Vec<String> = t
        .diagnostics
        .iter()
        .map(|d| {
            let at = d
                .location
                .as_ref()
                .map_or(String::new(), |l| l.text.clone());
            format!("{} [{at}]", d.short())
        })
        .collect();
    (t, all.join("\n"))
}

#[test]
fn bad_files_give_located_errors() {
    // A cut file keeps the nodes before the cut.
    let whole = fixture_bytes(0);
    let cut = &whole[..whole.len() - 3];
    let t = chakra::parse("cut.0.et", cut);
    let d = t
        .diagnostics
        .iter()
        .find(|d| d.is_error())
        .expect("an error");
    assert!(d.message.contains("is cut"), "{}", d.message);
    let loc = d.location.as_ref().expect("located");
    assert!(loc.text.starts_with("byte offset "), "{}", loc.text);
    assert_eq!(t.nodes_read, 9);

    // Missing and float attributes.
    let mut no_size = coll(
        1,
        "ar",
        CollectiveCommType::AllReduce,
        Value::Int64Val(8),
        &[],
    );
    no_size.attr.retain(|a| a.name != "comm_size");
    let float_size = coll(
        2,
        "ar2",
        CollectiveCommType::AllReduce,
        Value::DoubleVal(8.0),
        &[],
    );
    let (t, all) = errors_of(vec![no_size, float_size]);
    assert!(t.nodes.is_empty());
    assert!(all.contains("collective node 1 has no comm_size"), "{all}");
    assert!(
        all.contains("collective node 2 has comm_size as a float"),
        "{all}"
    );
    assert!(all.contains("[byte offset "), "{all}");

    // Duplicate ids, unknown dependencies and a cycle.
    let (t, all) = errors_of(vec![
        node(1, "a", NodeType::CompNode, &[2], 1),
        node(2, "b", NodeType::CompNode, &[1], 1),
        node(2, "b again", NodeType::CompNode, &[], 1),
        node(3, "c", NodeType::CompNode, &[42], 1),
    ]);
    assert!(all.contains("node id 2 at byte offset"), "{all}");
    assert!(
        all.contains("depends on node 42, which is not in the file"),
        "{all}"
    );
    assert!(
        all.contains("dependency cycle and never run: 1, 2"),
        "{all}"
    );
    assert_eq!(t.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), vec![3]);

    // No metadata at all.
    let t = chakra::parse("empty.0.et", &[0xff]);
    assert!(t.diagnostics[0].is_error());
}

#[test]
fn a_chakra_set_simulates() {
    let b0 = fixture_bytes(0);
    let b1 = fixture_bytes(1);
    let out = trainscope_core::run::run_files(
        &[("job.0.et", &b0), ("job.1.et", &b1)],
        &trainscope_core::engine::SimConfig::default(),
        &trainscope_core::run::RunOptions::default(),
    )
    .expect("simulates");
    assert_eq!(out.format, Format::ChakraEt);
    assert_eq!(out.parallel.dp, 2);
    // Rank 1 computes 10 + 150 + 50 + 20 µs; the collectives add to it.
    let t = out.result.summary.iteration_time_ns;
    assert!(t > 230_000, "{t}");
    assert!(out.notes.iter().any(|n| n.starts_with("Chakra traces")));
    // Rank 0's send is matched with rank 1's receive: one transfer of 1 KiB
    // from rank 0's send lane to rank 1's receive lane.
    let tl = &out.result.timeline;
    assert_eq!(tl.flows().len(), 1);
    assert_eq!(tl.flows()[0].bytes, 1024);
    assert!(
        !out.warnings
            .iter()
            .any(|w| w.contains("not matched") || w.contains("not synchronised")),
        "{:?}",
        out.warnings
    );
}
