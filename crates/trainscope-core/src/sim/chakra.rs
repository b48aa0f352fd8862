//! Chakra execution traces (FORMATS.md section 7) to and from the simulator.
//!
//! In ([`chakra_job`]): a run read by [`crate::formats::chakra::to_run`]
//! becomes a per-rank [`JobSpec`] with an explicit order: each rank's kept
//! nodes in their topological order, the compute between two collectives
//! one piece of compute (its nodes' `duration_micros` summed), each
//! collective re-costed by the configured network model over the whole
//! world (one data-parallel group: a collective without `pg_name` spans all
//! ranks in ASTRA-sim). Sizes: Chakra's `comm_size` is the full buffer for
//! all-reduce, reduce-scatter and all-to-all and the per-rank input for
//! all-gather, whose full size is `comm_size` x world. Branches of a rank's
//! graph that ASTRA-sim could run concurrently run one after another here
//! (trainscope's per-rank programs are sequences; the order is a
//! topological one, ties in file order).
//!
//! Out ([`write_timeline`]): a simulated timeline becomes one `.et` file per
//! simulated lane group (a rank of a per-rank job, a stage of an SPMD job:
//! the stage's program, which every rank of the stage runs). Per group,
//! every span is a node in start order (ids 0, 1, ...): compute spans are
//! `COMP_NODE` with `duration_micros` (ns rounded to the nearest µs) and
//! `is_cpu_op` false; collectives are `COMM_COLL_NODE` with integer
//! `comm_type` and `comm_size` (bytes; all-gather: the per-rank input, the
//! full size / the group's members) and `is_cpu_op` false; no `pg_name`
//! and no `involved_dim`, so ASTRA-sim runs each collective over all ranks
//! and all network dimensions (its defaults; a `pg_name` would need a
//! `--comm-group-configuration` file), while `trainscope_group` (a string
//! ASTRA-sim ignores) names the simulated group kind (`TP`, `DP`, ...);
//! stage-to-stage
//! transfers are `COMM_SEND_NODE` / `COMM_RECV_NODE` with `comm_src` /
//! `comm_dst` (the peer file's index) and `comm_tag` (the transfer's index)
//! as int32 values, `comm_size` as int64 (the encodings ASTRA-sim's feeder
//! reads: `comm_type` / `comm_size` from `int64_val`, peers and tags from
//! `int32_val`). Waits are not written (the replay re-creates them).
//! `data_deps`: the previous node of the same lane, the timeline's
//! recorded dependencies within the group, and, for a node with no
//! dependency on another lane, the last node of another lane of the group
//! that ended before it started.

use super::job::{
    check_size, Block, CollectiveKind, CommSpec, GroupKind, LayerSpec, Parallelism, PhaseOps,
    RankProgram,
};
use super::replay::{ByKind, ReplayJob};
use super::schedule::PipeStep;
use super::timeline::{CollOp, LaneGroup, SpanKind, SpanRef, Timeline};
use super::SimError;
use crate::formats::chakra::{
    encode,
    schema::{AttributeProto, CollectiveCommType, GlobalMetadata, Node, NodeType, Value},
    SCHEMA_VERSION,
};
use crate::workload::{CommKind, MeasuredRun, OpKind};
use std::collections::BTreeMap;

/// The note on every Chakra replay.
pub const CHAKRA_NOTE: &str = "Chakra traces: compute nodes run their duration_micros, collectives are re-costed by the configured network over all ranks; each rank's nodes run in one topological order (no concurrent branches)";

fn comm_spec(collective: CommKind, size_bytes: u64, world: u32) -> Option<CommSpec> {
    let (collective, size_bytes) = match collective {
        CommKind::AllReduce => (CollectiveKind::AllReduce, size_bytes),
        CommKind::ReduceScatter => (CollectiveKind::ReduceScatter, size_bytes),
        CommKind::AllToAll => (CollectiveKind::AllToAll, size_bytes),
        CommKind::AllGather => (
            CollectiveKind::AllGather,
            size_bytes.saturating_mul(u64::from(world)),
        ),
        _ => return None,
    };
    Some(CommSpec {
        collective,
        group: GroupKind::Dp,
        size_bytes,
    })
}

/// Rebuild a Chakra run as a per-rank job (see the module documentation).
pub fn chakra_job(run: &MeasuredRun) -> Result<(ReplayJob, Vec<String>), SimError> {
    let world = run.parallel.world.max(1);
    let parallel = Parallelism {
        tp: 1,
        dp: world,
        pp: 1,
        ep: 1,
    };
    check_size(parallel, 0, 1, 1, 0, 0)?;
    let mut programs = Vec::new();
    let mut present = Vec::new();
    for rt in &run.ranks {
        let mut layers = Vec::new();
        let mut acc = 0u64;
        for op in &rt.ops {
            match op.kind {
                OpKind::Collective { collective, .. } => {
                    if let Some(spec) = comm_spec(collective, op.message_bytes.unwrap_or(0), world)
                    {
                        layers.push(LayerSpec {
                            name: op.name.clone(),
                            forward: PhaseOps {
                                compute_ns: acc,
                                comm: Some(spec),
                            },
                            input_grad: PhaseOps::default(),
                            weight_grad: PhaseOps::default(),
                            update_ns: 0,
                        });
                        acc = 0;
                    }
                }
                _ => acc = acc.saturating_add(op.duration_ns.unwrap_or(0)),
            }
        }
        if acc > 0 || layers.is_empty() {
            layers.push(LayerSpec::compute("compute", acc, 0, 0));
        }
        present.push(rt.rank);
        programs.push(RankProgram {
            rank: rt.rank,
            stage: 0,
            blocks: vec![Block { layers }],
            micro_batch_blocks: Vec::new(),
            pre_rows: Vec::new(),
            post_rows: Vec::new(),
            order: Some(vec![PipeStep::f(0, 0), PipeStep::b(0, 0)]),
        });
    }
    if programs.is_empty() {
        return Err(SimError::InvalidJob(
            "no Chakra file of the set has a node to simulate".to_string(),
        ));
    }
    let layers = programs
        .iter()
        .map(|p| p.blocks[0].layers.len() as u64)
        .max()
        .unwrap_or(0);
    check_size(parallel, programs.len() as u64, 1, 1, layers, 0)?;
    let mut warnings = Vec::new();
    if (programs.len() as u64) < parallel.world() {
        warnings.push(format!(
            "{} of {} ranks have a Chakra file; collectives are assumed to start with the simulated members",
            programs.len(),
            parallel.world()
        ));
    }
    Ok((
        ReplayJob::per_rank(
            "chakra replay",
            parallel,
            programs,
            present,
            ByKind::default(),
            None,
        ),
        warnings,
    ))
}

/// The Chakra files of a simulated timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct ChakraExport {
    /// (file index = the rank ASTRA-sim gives it, what it stands for, bytes).
    pub files: Vec<(u32, String, Vec<u8>)>,
    /// Assumptions made.
    pub warnings: Vec<String>,
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(Value::Int64Val(v)),
    }
}

fn int32_attr(name: &str, v: i32) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(Value::Int32Val(v)),
    }
}

fn bool_attr(name: &str, v: bool) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(Value::BoolVal(v)),
    }
}

fn string_attr(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.to_string(),
        doc_string: String::new(),
        value: Some(Value::StringVal(v.to_string())),
    }
}

fn group_of(kind: SpanKind) -> Option<GroupKind> {
    match kind {
        SpanKind::CollTp => Some(GroupKind::Tp),
        SpanKind::CollEp => Some(GroupKind::Ep),
        SpanKind::CollDp => Some(GroupKind::Dp),
        SpanKind::CollDpEp => Some(GroupKind::DpEp),
        _ => None,
    }
}

fn micros(ns: u64) -> u64 {
    ns / 1000 + u64::from(ns % 1000 >= 500)
}

/// Write `timeline` (of a job with `parallel`) as Chakra files (see the
/// module documentation).
pub fn write_timeline(timeline: &Timeline, parallel: Parallelism) -> ChakraExport {
    let mut warnings = Vec::new();
    // Lane groups in lane order: (group kind, group) → file index.
    let mut groups: BTreeMap<(u8, u32), u32> = BTreeMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut lane_file: Vec<u32> = Vec::new();
    let mut spmd = false;
    for lane in timeline.lanes() {
        let key = (
            match lane.group_kind {
                LaneGroup::Rank => 0u8,
                _ => 1u8,
            },
            lane.group,
        );
        spmd |= lane.group_kind != LaneGroup::Rank;
        let next = groups.len() as u32;
        let idx = *groups.entry(key).or_insert_with(|| {
            names.push(if key.0 == 0 {
                format!("rank {}", lane.group)
            } else {
                format!("stage {}", lane.stage)
            });
            next
        });
        lane_file.push(idx);
    }
    if spmd && parallel.world() > groups.len() as u64 {
        warnings.push(format!(
            "the job is simulated per stage: one file per stage ({} files) stands for all {} ranks; run ASTRA-sim with {} NPUs, or give each rank of a stage its stage's file",
            groups.len(),
            parallel.world(),
            groups.len()
        ));
    }
    // Per file: spans (lane, index) in start order.
    let nfiles = groups.len();
    let mut per_file: Vec<Vec<SpanRef>> = vec![Vec::new(); nfiles];
    let mut skipped_waits = 0u64;
    for (li, _) in timeline.lanes().iter().enumerate() {
        let lane = li as u32;
        for (si, s) in timeline.spans(lane).iter().enumerate() {
            if s.kind == SpanKind::Wait {
                skipped_waits += 1;
                continue;
            }
            per_file[lane_file[li] as usize].push(SpanRef {
                lane,
                index: si as u32,
            });
        }
    }
    if skipped_waits > 0 {
        warnings.push(format!(
            "{skipped_waits} wait span(s) are not written: the replay re-creates waiting"
        ));
    }
    // Transfers: span → (peer file, tag).
    let mut peer: BTreeMap<SpanRef, (u32, u64)> = BTreeMap::new();
    for (tag, f) in timeline.flows().iter().enumerate() {
        let (Some(a), Some(b)) = (
            lane_file.get(f.from.lane as usize),
            lane_file.get(f.to.lane as usize),
        ) else {
            continue;
        };
        peer.insert(f.from, (*b, tag as u64));
        peer.insert(f.to, (*a, tag as u64));
    }
    let mut files = Vec::with_capacity(nfiles);
    let mut unpaired = 0u64;
    for (fi, mut refs) in per_file.into_iter().enumerate() {
        refs.sort_by_key(|r| {
            let s = timeline.span(*r).map_or(0, |s| s.start_ns);
            (s, r.lane, r.index)
        });
        let id_of: BTreeMap<SpanRef, u64> = refs
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, i as u64))
            .collect();
        // Ends seen so far, for the cross-lane fallback: (end, lane, id).
        let mut by_end: Vec<(u64, u32, u64)> = refs
            .iter()
            .filter_map(|r| Some((timeline.span(*r)?.end_ns(), r.lane, id_of[r])))
            .collect();
        by_end.sort_unstable();
        let mut last_on_lane: BTreeMap<u32, u64> = BTreeMap::new();
        let mut nodes = Vec::with_capacity(refs.len());
        for r in &refs {
            let Some(s) = timeline.span(*r) else {
                continue;
            };
            let id = id_of[r];
            let mut deps: Vec<u64> = Vec::new();
            if let Some(p) = last_on_lane.insert(r.lane, id) {
                deps.push(p);
            }
            let mut cross = false;
            for d in timeline.dependencies(*r) {
                if let Some(did) = id_of.get(d) {
                    if *did < id {
                        deps.push(*did);
                        cross |= d.lane != r.lane;
                    }
                }
            }
            if !cross {
                // The last node of another lane that ended by this start.
                let upto = by_end.partition_point(|(e, _, _)| *e <= s.start_ns);
                if let Some((_, _, did)) = by_end[..upto]
                    .iter()
                    .rev()
                    .find(|(_, l, did)| *l != r.lane && *did < id)
                {
                    deps.push(*did);
                }
            }
            deps.sort_unstable();
            deps.dedup();
            let name = timeline.label(s.label).to_string();
            let mut node = Node {
                id,
                name,
                r#type: NodeType::CompNode as i32,
                ctrl_deps: Vec::new(),
                data_deps: deps,
                start_time_micros: micros(s.start_ns),
                duration_micros: 0,
                inputs: None,
                outputs: None,
                attr: Vec::new(),
            };
            let coll_type = match s.coll {
                CollOp::AllReduce => Some(CollectiveCommType::AllReduce),
                CollOp::AllGather => Some(CollectiveCommType::AllGather),
                CollOp::ReduceScatter => Some(CollectiveCommType::ReduceScatter),
                CollOp::AllToAll => Some(CollectiveCommType::AllToAll),
                _ => None,
            };
            let size = i64::try_from(s.bytes).unwrap_or(i64::MAX);
            match (s.kind, coll_type) {
                (SpanKind::Send | SpanKind::Recv, _) => {
                    let send = s.kind == SpanKind::Send;
                    node.r#type = if send {
                        NodeType::CommSendNode as i32
                    } else {
                        NodeType::CommRecvNode as i32
                    };
                    let (p, tag) = peer.get(r).copied().unwrap_or_else(|| {
                        unpaired += 1;
                        (fi as u32, u64::MAX)
                    });
                    // ASTRA-sim reads peers and tags as int32_val.
                    node.attr.push(int32_attr(
                        if send { "comm_dst" } else { "comm_src" },
                        i32::try_from(p).unwrap_or(i32::MAX),
                    ));
                    node.attr.push(int_attr("comm_size", size));
                    node.attr
                        .push(int32_attr("comm_tag", i32::try_from(tag).unwrap_or(-1)));
                }
                (_, Some(ct)) => {
                    let group = group_of(s.kind);
                    let members = group.map_or(1, |g| parallel.group_size(g)).max(1);
                    let size = if ct == CollectiveCommType::AllGather {
                        size / i64::from(members)
                    } else {
                        size
                    };
                    node.r#type = NodeType::CommCollNode as i32;
                    node.attr.push(int_attr("comm_type", ct as i64));
                    node.attr.push(int_attr("comm_size", size));
                    node.attr.push(bool_attr("is_cpu_op", false));
                    node.attr.push(string_attr(
                        "trainscope_group",
                        group.map_or("ALL", GroupKind::name),
                    ));
                }
                _ => {
                    // Compute (and collectives trainscope has no Chakra
                    // type for, kept as their simulated time).
                    node.duration_micros = micros(s.duration_ns);
                    node.attr.push(bool_attr("is_cpu_op", false));
                }
            }
            nodes.push(node);
        }
        let meta = GlobalMetadata {
            version: SCHEMA_VERSION.to_string(),
            attr: vec![string_attr("producer", "trainscope")],
        };
        files.push((fi as u32, names[fi].clone(), encode(&meta, &nodes)));
    }
    if unpaired > 0 {
        warnings.push(format!(
            "{unpaired} transfer(s) have no simulated peer: written with the own file as peer and tag -1"
        ));
    }
    ChakraExport { files, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::chakra::{parse, schema::Value, NodeWork};
    use crate::sim::timeline::{Lane, Span, Stream, TimelineBuilder};
    use prost::Message;

    /// Two ranks: forward (2 µs), a DP all-reduce of 1 MiB (3 µs), an
    /// all-gather of 4096 bytes gathered (1 µs), backward (1.5 µs), with
    /// the engine's dependencies between them.
    fn timeline() -> Timeline {
        let mut tb = TimelineBuilder::new();
        for rank in 0..2u32 {
            let c = tb.lane(Lane {
                group_kind: LaneGroup::Rank,
                group: rank,
                stage: 0,
                stream: Stream::Compute,
                name: format!("rank {rank} / compute"),
            });
            let g = tb.lane(Lane {
                group_kind: LaneGroup::Rank,
                group: rank,
                stage: 0,
                stream: Stream::GradSync,
                name: format!("rank {rank} / dp"),
            });
            let span = |tb: &mut TimelineBuilder, name: &str, start, dur, bytes, kind, coll| Span {
                start_ns: start,
                duration_ns: dur,
                bytes,
                label: tb.label(name),
                layer: Span::NONE,
                micro_batch: 0,
                kind,
                coll,
                chunk: 0,
            };
            let f = span(&mut tb, "fwd", 0, 2000, 0, SpanKind::Forward, CollOp::None);
            let f = tb.push(c, f);
            let ar = span(
                &mut tb,
                "ar",
                2000,
                3000,
                1 << 20,
                SpanKind::CollDp,
                CollOp::AllReduce,
            );
            let ar = tb.push(g, ar);
            let ag = span(
                &mut tb,
                "ag",
                5000,
                1000,
                4096,
                SpanKind::CollDp,
                CollOp::AllGather,
            );
            let ag = tb.push(g, ag);
            let b = span(
                &mut tb,
                "bwd",
                6000,
                1500,
                0,
                SpanKind::InputGrad,
                CollOp::None,
            );
            let b = tb.push(c, b);
            tb.dependency(f, ar);
            tb.dependency(ag, b);
        }
        tb.build()
    }

    fn parallel() -> Parallelism {
        Parallelism {
            tp: 1,
            dp: 2,
            pp: 1,
            ep: 1,
        }
    }

    #[test]
    fn written_files_carry_the_attributes_astra_sim_requires() {
        let ex = write_timeline(&timeline(), parallel());
        assert_eq!(ex.files.len(), 2);
        for (_, _, bytes) in &ex.files {
            let mut buf: &[u8] = bytes;
            let meta = GlobalMetadata::decode_length_delimited(&mut buf).unwrap();
            assert_eq!(meta.version, SCHEMA_VERSION);
            let mut ids = Vec::new();
            while !buf.is_empty() {
                let n = Node::decode_length_delimited(&mut buf).unwrap();
                for d in n.data_deps.iter().chain(&n.ctrl_deps) {
                    assert!(
                        ids.contains(d),
                        "node {} depends on {d}, not written before",
                        n.id
                    );
                }
                let int = |name: &str| {
                    n.attr
                        .iter()
                        .find(|a| a.name == name)
                        .map(|a| match a.value {
                            Some(Value::Int64Val(v)) => v,
                            ref other => panic!("{name} is not an int64: {other:?}"),
                        })
                };
                let cpu = n.attr.iter().find(|a| a.name == "is_cpu_op");
                assert_eq!(cpu.unwrap().value, Some(Value::BoolVal(false)));
                match NodeType::try_from(n.r#type).unwrap() {
                    NodeType::CompNode => assert!(n.duration_micros > 0),
                    NodeType::CommCollNode => {
                        let t = int("comm_type").expect("comm_type");
                        let s = int("comm_size").expect("comm_size");
                        match n.name.as_str() {
                            "ar" => {
                                assert_eq!((t, s), (CollectiveCommType::AllReduce as i64, 1 << 20))
                            }
                            // The per-rank input: 4096 gathered over 2 ranks.
                            "ag" => {
                                assert_eq!((t, s), (CollectiveCommType::AllGather as i64, 2048))
                            }
                            other => panic!("unexpected collective {other}"),
                        }
                        assert!(!n.attr.iter().any(|a| a.name == "pg_name"));
                    }
                    other => panic!("unexpected node type {other:?}"),
                }
                ids.push(n.id);
            }
            assert_eq!(ids, vec![0, 1, 2, 3]);
        }
    }

    #[test]
    fn round_trip_keeps_nodes_durations_sizes_and_dependencies() {
        let ex = write_timeline(&timeline(), parallel());
        let (_, _, bytes) = &ex.files[1];
        let t = parse("job.1.et", bytes);
        assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
        assert_eq!(t.rank, Some(1));
        type Row<'a> = (u64, &'a str, NodeWork, u64, u64, Vec<u64>);
        let got: Vec<Row> = t
            .nodes
            .iter()
            .map(|n| {
                (
                    n.id,
                    n.name.as_str(),
                    n.work,
                    n.duration_ns,
                    n.size_bytes,
                    n.deps.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, "fwd", NodeWork::Compute, 2000, 0, vec![]),
                (
                    1,
                    "ar",
                    NodeWork::Collective(CommKind::AllReduce),
                    0,
                    1 << 20,
                    vec![0]
                ),
                (
                    2,
                    "ag",
                    NodeWork::Collective(CommKind::AllGather),
                    0,
                    2048,
                    vec![0, 1]
                ),
                (3, "bwd", NodeWork::Compute, 2000, 0, vec![0, 2]),
            ]
        );
        // Start times come back (µs on the file).
        let starts: Vec<Option<u64>> = t.nodes.iter().map(|n| n.start_ns).collect();
        assert_eq!(starts, vec![Some(0), Some(2000), Some(5000), Some(6000)]);
        // The replay job gets the full all-gather size back and the
        // compute between collectives.
        let run = crate::formats::chakra::to_run(&[t]);
        let (rj, _) = chakra_job(&run).unwrap();
        let layers = &rj.job.programs[0].blocks[0].layers;
        assert_eq!(layers[0].forward.compute_ns, 2000);
        assert_eq!(layers[0].forward.comm.unwrap().size_bytes, 1 << 20);
        assert_eq!(layers[1].forward.compute_ns, 0);
        assert_eq!(layers[1].forward.comm.unwrap().size_bytes, 4096);
        assert_eq!(layers[2].forward.compute_ns, 2000);
        assert_eq!(rj.job.parallel.dp, 2);
    }

    #[test]
    fn transfers_name_their_peer_and_tag_as_int32() {
        let mut tb = TimelineBuilder::new();
        let mut refs = Vec::new();
        for (rank, stream, kind) in [
            (0u32, Stream::Send, SpanKind::Send),
            (1, Stream::Recv, SpanKind::Recv),
        ] {
            let l = tb.lane(Lane {
                group_kind: LaneGroup::Rank,
                group: rank,
                stage: rank,
                stream,
                name: format!("rank {rank}"),
            });
            let label = tb.label("act");
            refs.push(tb.push(
                l,
                Span {
                    start_ns: 0,
                    duration_ns: 1000,
                    bytes: 512,
                    label,
                    layer: Span::NONE,
                    micro_batch: 0,
                    kind,
                    coll: CollOp::SendRecv,
                    chunk: 0,
                },
            ));
        }
        tb.flow(crate::sim::timeline::Flow {
            from: refs[0],
            to: refs[1],
            bytes: 512,
            micro_batch: 0,
        });
        let p = Parallelism {
            tp: 1,
            dp: 1,
            pp: 2,
            ep: 1,
        };
        let ex = write_timeline(&tb.build(), p);
        let expect = [
            (NodeType::CommSendNode, "comm_dst", 1),
            (NodeType::CommRecvNode, "comm_src", 0),
        ];
        for ((_, _, bytes), (ty, peer, value)) in ex.files.iter().zip(expect) {
            let mut buf: &[u8] = bytes;
            GlobalMetadata::decode_length_delimited(&mut buf).unwrap();
            let n = Node::decode_length_delimited(&mut buf).unwrap();
            assert_eq!(n.r#type, ty as i32);
            let get = |name: &str| {
                n.attr
                    .iter()
                    .find(|a| a.name == name)
                    .and_then(|a| a.value.clone())
            };
            assert_eq!(get(peer), Some(Value::Int32Val(value)));
            assert_eq!(get("comm_tag"), Some(Value::Int32Val(0)));
            assert_eq!(get("comm_size"), Some(Value::Int64Val(512)));
        }
        assert!(ex.warnings.is_empty(), "{:?}", ex.warnings);
    }
}
