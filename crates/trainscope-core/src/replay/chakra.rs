//! Chakra execution traces (docs/FORMATS.md §2.7) to and from the simulator.
//!
//! In ([`chakra_job`]): a run read by [`crate::formats::chakra::to_run`]
//! becomes a per-rank [`JobSpec`] with an explicit order: each rank's kept
//! nodes in their topological order, the compute between two collectives
//! one piece of compute (its nodes' `duration_micros` summed), each
//! collective re-costed by the configured network model over its group:
//! the run's parallel configuration and each collective's group kind come
//! from the set's `comm_groups.json` when given (a Megatron layout, ranks
//! placed TP fastest, then DP, then PP; see
//! [`crate::formats::chakra::to_run`]), else every collective runs over
//! the whole world as one data-parallel group (a collective without
//! `pg_name` spans all ranks in ASTRA-sim). Sizes: Chakra's `comm_size` is
//! the full buffer for all-reduce, reduce-scatter and all-to-all and the
//! per-rank input for all-gather, whose full size is `comm_size` x the
//! group's members. Sends and receives matched by the reader (per ordered
//! pair of ranks and tag, in file order; see [`crate::formats::chakra`])
//! are the job's point-to-point transfers ([`crate::engine::spec::Transfer`]): a
//! send is issued where it stands in its rank's order, after the rank's
//! work before it and the transfers it depends on, without holding the
//! rank up (an asynchronous send); the transfer holds the sender's send
//! and the receiver's receive stream and is costed as the pipeline's
//! stage-to-stage transfers are (point-to-point over the link between the
//! two ranks' placements: NVLink in a node, the NICs across nodes); the
//! receive is no work of its own: the nodes that depend on it (directly,
//! or through another receive) wait for the transfer's end, as do the
//! nodes that depend on a send. Stages are not linked as a pipeline
//! besides ([`crate::engine::spec::JobSpec::pipelined`] false). Without a pipeline
//! layout (no groups file) every collective spans all ranks; when the
//! transfers make such collectives wait on each other for ever (stage 0's
//! first collective before its first send, stage 1's after its first
//! receive), the run simulates the collectives unsynchronised, with a
//! warning ([`crate::run`]). Branches of a rank's graph that ASTRA-sim
//! could run concurrently run one after another here (trainscope's
//! per-rank programs are sequences; the order is a topological one, ties:
//! sends and receives first, then file order), so a replay of a job whose
//! asynchronous collectives overlapped others (a DP gradient sync beside
//! the embedding all-reduce) is longer than the original.
//!
//! A run whose ranks of each stage all run the stage's first rank's
//! program (the same ops, durations, sizes, group kinds and waits; transfers
//! to the same TP and DP index on another stage; checked op by op) is
//! simulated one rank per stage
//! ([`crate::engine::spec::JobSpec::stage_copies`]: each stands for
//! its stage's ranks, with their share of its node's NICs), unless the
//! caller treats ranks one by one (a slowed rank, injected faults,
//! per-rank blame): every figure equals the simulation of every rank
//! (tested); the summary lists the simulated ranks' rows and says so.
//!
//! Out ([`write_timeline`]): a simulated timeline becomes one `.et` file per
//! world rank ([`ChakraExport::file`] makes each on demand). A job
//! simulated per stage (SPMD) gives every rank its stage's program; a
//! per-rank job's files are its ranks. Per file, every span is a node in
//! start order (ids 0, 1, ...; at one start, sends and receives first, and
//! each collective also waits (`ctrl_deps`) for the latest send before it:
//! ASTRA-sim runs one communication node at a time per rank, lowest id
//! first, and a collective ahead of a send its peer waits for deadlocks
//! it): compute spans are `COMP_NODE` with
//! `duration_micros` (ns rounded to the nearest µs) and `is_cpu_op` false;
//! collectives are `COMM_COLL_NODE` with integer `comm_type` and
//! `comm_size` (bytes; all-gather: the per-rank input, the full size / the
//! group's members), `is_cpu_op` false and `pg_name`: the id of the rank's
//! group (TP, DP, EP, DP_EP by Megatron's placement; the tied-embedding
//! all-reduce: the first and last stages' ranks) in the comm-group file
//! [`ChakraExport::comm_groups_json`] (ASTRA-sim's
//! `--comm-group-configuration`: `{"id": [ranks]}`); a group of every rank
//! has no `pg_name` (ASTRA-sim's default group). `trainscope_group` (a
//! string ASTRA-sim ignores) names the group kind. Above
//! [`MAX_RANK_FILES`] ranks, or for a per-rank job missing ranks, the files
//! are as simulated (one per stage / present rank) and collectives carry
//! no `pg_name`, with a warning. Stage-to-stage
//! transfers are `COMM_SEND_NODE` / `COMM_RECV_NODE` with `comm_src` /
//! `comm_dst` (the peer's rank: the same TP and DP index on the other
//! stage) and `comm_tag` (the transfer's index)
//! as int32 values, `comm_size` as int64 (the encodings ASTRA-sim's feeder
//! reads: `comm_type` / `comm_size` from `int64_val`, peers and tags from
//! `int32_val`). Waits are not written (the replay re-creates them).
//! `data_deps`: the previous node of the same lane, the timeline's
//! recorded dependencies within the group, and, for a node with no
//! dependency on another lane, the last node of another lane of the group
//! that ended before it started.

use crate::engine::schedule::PipeStep;
use crate::engine::spec::{
    check_size, Block, CollectiveKind, CommSpec, GroupKind, LayerSpec, Parallelism, PhaseOps,
    RankProgram, Transfer,
};
use crate::engine::SimError;
use crate::engine::{
    config::PlacementOrder,
    network::{Coords, Placement},
};
use crate::formats::chakra::{
    encode,
    schema::{AttributeProto, CollectiveCommType, GlobalMetadata, Node, NodeType, Value},
    SCHEMA_VERSION,
};
use crate::replay::{ByKind, ReplayJob};
use crate::timeline::{CollOp, LaneGroup, SpanKind, SpanRef, Stream, Timeline};
use crate::workload::{CommGroup, CommKind, MeasuredRun, OpKind, OwnOp};
use std::collections::{BTreeMap, BTreeSet};

/// The note on every Chakra replay.
pub const CHAKRA_NOTE: &str = "Chakra traces: compute nodes run their duration_micros, collectives are re-costed by the configured network over their process group (comm_groups.json; without it, over all ranks), sends matched with receives (by pair of ranks and tag, in file order) are point-to-point transfers the receivers' dependents wait for; each rank's nodes run in one topological order (no concurrent branches)";

/// The engine's group of a collective's group in a Chakra run (a world
/// group of the fallback is the data-parallel group of every rank).
fn group_kind(group: CommGroup) -> GroupKind {
    match group {
        CommGroup::Tp => GroupKind::Tp,
        CommGroup::Ep => GroupKind::Ep,
        CommGroup::DpEp => GroupKind::DpEp,
        CommGroup::Cp => GroupKind::Cp,
        CommGroup::DpShard => GroupKind::DpShard,
        CommGroup::DpReplicate => GroupKind::DpReplicate,
        CommGroup::Embedding | CommGroup::PositionEmbedding | CommGroup::Pp => GroupKind::Pp,
        CommGroup::Dp | CommGroup::Unscoped => GroupKind::Dp,
    }
}

fn comm_spec(
    collective: CommKind,
    group: CommGroup,
    size_bytes: u64,
    parallel: Parallelism,
) -> Option<CommSpec> {
    let collective = match crate::replay::infer::collective_kind(collective) {
        CollectiveKind::SendRecv => return None,
        c => c,
    };
    let group = group_kind(group);
    let size_bytes = if collective == CollectiveKind::AllGather {
        size_bytes.saturating_mul(u64::from(parallel.group_size(group)))
    } else {
        size_bytes
    };
    Some(CommSpec {
        collective,
        group,
        size_bytes,
        prefetch: 0,
    })
}

/// Whether every rank of each stage runs its stage's first rank's program
/// (a copy: the same ops, durations, sizes, groups and waits, its transfers
/// going to the ranks of the same TP and DP index on other stages as the
/// first rank's go to those stages' first ranks): then simulating the
/// stages' first ranks, each with its stage's NIC share
/// ([`crate::engine::spec::JobSpec::stage_copies`]), gives what simulating
/// every rank gives. Needs every rank of the world, ascending.
fn stage_copies(run: &MeasuredRun, parallel: Parallelism) -> bool {
    let per_stage = u64::from(parallel.tp) * u64::from(parallel.dp);
    if per_stage <= 1
        || parallel.world() != run.ranks.len() as u64
        || run
            .ranks
            .iter()
            .enumerate()
            .any(|(i, r)| r.rank as usize != i)
    {
        return false;
    }
    let per_stage = per_stage as u32;
    run.ranks.iter().all(|rt| {
        let first = rt.rank - rt.rank % per_stage;
        let d = rt.rank - first;
        let rep = &run.ranks[first as usize];
        if d == 0 {
            return true;
        }
        let n = run.op_count_of(rt);
        if rt.stage != rep.stage || n != run.op_count_of(rep) {
            return false;
        }
        // Op i of a rank: its program's op and the values it holds for
        // itself, if any.
        let (pa, pb) = (&run.program_of(rt).ops, &run.program_of(rep).ops);
        let (mut oa, mut ob) = (rt.own_values(), rep.own_values());
        // Ranks running one program: an op neither holds its own values
        // for is the same op on both, a copy only without a peer.
        let shared = std::ptr::eq(pa, pb);
        (0..n).all(|i| {
            let (a, b) = (oa.op(&pa[i], i), ob.op(&pb[i], i));
            if shared && a.own.is_none() && b.own.is_none() {
                return a.op.peer.is_none();
            }
            let p2p = matches!(b.kind(), OpKind::Send | OpKind::Recv);
            let peer = match (a.peer(), b.peer()) {
                (None, None) => true,
                (Some(pa), Some(pb)) => pb % per_stage == 0 && pb.checked_add(d) == Some(pa),
                _ => false,
            };
            // One op of one program read by both: its own fields agree.
            let same_op = std::ptr::eq(a.op, b.op);
            peer && a.kind() == b.kind()
                && a.duration_ns() == b.duration_ns()
                && a.transfer().is_some() == b.transfer().is_some()
                && (same_op
                    || (a.op.message_bytes == b.op.message_bytes
                        && a.op.waits_for == b.op.waits_for
                        && a.op.name == b.op.name))
                && (!p2p || a.detail() == b.detail())
        })
    })
}

/// Rebuild a Chakra run as a per-rank job (see the module documentation).
/// With `copies`, a run whose ranks of a stage all run the same program
/// ([`stage_copies`]) is simulated one rank per stage
/// ([`crate::engine::spec::JobSpec::stage_copies`]); callers that treat
/// ranks one by one (a slowed rank, injected faults, per-rank blame) pass
/// false.
pub fn chakra_job(run: &MeasuredRun, copies: bool) -> Result<(ReplayJob, Vec<String>), SimError> {
    let world = run.parallel.world.max(1);
    let p = &run.parallel;
    let parallel = if u64::from(p.tp) * u64::from(p.dp) * u64::from(p.pp) == u64::from(world) {
        Parallelism {
            tp: p.tp.max(1),
            dp: p.dp.max(1),
            pp: p.pp.max(1),
            ep: p.ep.max(1),
            cp: 1,
            etp: None,
            dp_shard: 0,
        }
    } else {
        Parallelism {
            tp: 1,
            dp: world,
            pp: 1,
            ep: 1,
            cp: 1,
            etp: None,
            dp_shard: 0,
        }
    };
    check_size(parallel, 0, 1, 1, 0, 0)?;
    let copies = copies && stage_copies(run, parallel);
    let per_stage = parallel.tp * parallel.dp;
    let mut programs = Vec::new();
    let mut present = Vec::new();
    let n_transfers = run
        .ranks
        .iter()
        .flat_map(|rt| {
            // A copy's other transfers are its program's.
            let own = rt.own_values().all();
            rt.ops
                .iter()
                .filter_map(|o| o.transfer)
                .chain(own.filter_map(|v| v.transfer))
        })
        .max()
        .map_or(0, |t| t as usize + 1);
    let mut transfers: Vec<Option<Transfer>> = vec![None; n_transfers];
    // (transfer, rank, boundary) of every chain wait.
    let mut waits_at: Vec<(u32, u32, u32)> = Vec::new();
    for rt in run
        .ranks
        .iter()
        .filter(|rt| !copies || rt.rank % per_stage == 0)
    {
        let mut layers: Vec<LayerSpec> = Vec::new();
        let mut acc = 0u64;
        // The compute so far as a layer of its own: a transfer point goes
        // between layers.
        let flush = |layers: &mut Vec<LayerSpec>, acc: &mut u64| {
            if *acc > 0 {
                layers.push(LayerSpec::compute("compute", *acc, 0, 0));
                *acc = 0;
            }
        };
        // Ops whose transfer the chain already waits for.
        let mut waited: BTreeSet<usize> = BTreeSet::new();
        // The rank's ops read in place: its program's, with the values
        // it holds for itself (a copy's are not made).
        let ops = &run.program_of(rt).ops;
        let copy = rt.copy.as_ref();
        // Op `j` as the rank runs it (any `j`: what an op waits for).
        let dep = |j: usize| {
            let op = ops.get(j)?;
            Some(OwnOp {
                op,
                own: copy.and_then(|c| c.values_of(j)),
            })
        };
        let mut own = rt.own_values();
        for (i, op) in ops.iter().enumerate() {
            let this = own.op(op, i);
            let kind = this.kind();
            let direct = || {
                op.waits_for
                    .iter()
                    .filter_map(|j| dep(*j as usize)?.transfer())
                    .collect::<Vec<u32>>()
            };
            match (kind, this.transfer(), this.peer()) {
                (OpKind::Send, Some(t), Some(peer)) => {
                    let waits = direct();
                    flush(&mut layers, &mut acc);
                    if let Some(slot) = transfers.get_mut(t as usize) {
                        *slot = Some(Transfer {
                            label: op.name.clone(),
                            from_rank: rt.rank,
                            to_rank: peer,
                            size_bytes: op.message_bytes.unwrap_or(0),
                            send_at: layers.len() as u32,
                            after: waits,
                            waited_at: Vec::new(),
                        });
                    }
                    continue;
                }
                // A receive is no work of the rank's chain: what depends on
                // it waits for its transfer.
                (OpKind::Recv, Some(_), _) => continue,
                _ => {}
            }
            // A chain node waits for the transfers it depends on and,
            // through a receive, for what that receive depends on (each
            // once: the chain keeps the order).
            let mut waits: Vec<u32> = Vec::new();
            let mut todo: Vec<usize> = op.waits_for.iter().map(|j| *j as usize).collect();
            while let Some(j) = todo.pop() {
                let Some(d) = dep(j) else { continue };
                if !waited.insert(j) {
                    continue;
                }
                if let Some(t) = d.transfer() {
                    waits.push(t);
                }
                if d.kind() == OpKind::Recv {
                    todo.extend(d.op.waits_for.iter().map(|k| *k as usize));
                }
            }
            waits.sort_unstable();
            if !waits.is_empty() {
                flush(&mut layers, &mut acc);
                let at = layers.len() as u32;
                waits_at.extend(waits.iter().map(|t| (*t, rt.rank, at)));
            }
            match kind {
                OpKind::Collective { collective, group } => {
                    if let Some(spec) =
                        comm_spec(collective, group, op.message_bytes.unwrap_or(0), parallel)
                    {
                        layers.push(LayerSpec {
                            name: op.name.clone(),
                            forward: PhaseOps {
                                compute_ns: acc,
                                comm: Some(spec),
                                ..Default::default()
                            },
                            input_grad: PhaseOps::default(),
                            weight_grad: PhaseOps::default(),
                            update_ns: 0,
                        });
                        acc = 0;
                    }
                }
                _ => acc = acc.saturating_add(this.duration_ns().unwrap_or(0)),
            }
        }
        if acc > 0 || layers.is_empty() {
            layers.push(LayerSpec::compute("compute", acc, 0, 0));
        }
        present.push(rt.rank);
        programs.push(RankProgram {
            rank: rt.rank,
            stage: if parallel.pp > 1 {
                rt.stage.unwrap_or(0)
            } else {
                0
            },
            blocks: vec![Block { layers }],
            micro_batch_blocks: Vec::new(),
            pre_rows: Vec::new(),
            post_rows: Vec::new(),
            order: Some(vec![PipeStep::f(0, 0), PipeStep::b(0, 0)]),
            chunk_layers: Vec::new(),
        });
    }
    if programs.is_empty() {
        return Err(SimError::InvalidJob(
            "no Chakra file of the set has a node to simulate".to_string(),
        ));
    }
    // One rank per stage: the transfers between copies are not simulated;
    // the others keep their order, renumbered.
    let mut renumber: Vec<u32> = (0..transfers.len() as u32).collect();
    if copies {
        let mut next = 0;
        for (t, x) in transfers.iter().enumerate() {
            renumber[t] = if x.is_some() {
                next += 1;
                next - 1
            } else {
                u32::MAX
            };
        }
        transfers.retain(Option::is_some);
    }
    let mut transfers: Vec<Transfer> = transfers
        .into_iter()
        .enumerate()
        .map(|(t, x)| {
            x.ok_or_else(|| {
                SimError::InvalidJob(format!("Chakra transfer {t} has no matched send"))
            })
        })
        .collect::<Result<_, _>>()?;
    if copies {
        for x in &mut transfers {
            for a in &mut x.after {
                *a = renumber[*a as usize];
            }
        }
    }
    for (t, rank, at) in waits_at {
        if let Some(x) = transfers.get_mut(renumber[t as usize] as usize) {
            x.waited_at.push((rank, at));
        }
    }
    let layers = programs
        .iter()
        .map(|p| p.blocks[0].layers.len() as u64)
        .max()
        .unwrap_or(0);
    check_size(parallel, programs.len() as u64, 1, 1, layers, 0)?;
    let mut warnings = Vec::new();
    if !copies && (programs.len() as u64) < parallel.world() {
        warnings.push(format!(
            "{} of {} ranks have a Chakra file; collectives are assumed to start with the simulated members",
            programs.len(),
            parallel.world()
        ));
    }
    let mut rj = ReplayJob::per_rank(
        "chakra replay",
        parallel,
        programs,
        present,
        ByKind::default(),
        None,
    );
    // Ranks meet in their collectives and their matched transfers; stages
    // are not linked as a pipeline besides.
    rj.job.pipelined = false;
    rj.job.transfers = transfers;
    rj.job.stage_copies = copies;
    Ok((rj, warnings))
}

/// Jobs simulated per stage are written one file per world rank up to
/// this many ranks (above it, one file per stage, with a warning).
pub const MAX_RANK_FILES: u64 = 4096;

/// What a written node needs per rank: its collective's group, or its
/// transfer peer (the attribute to set and the peer's template file).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Patch {
    None,
    Coll(GroupKind),
    Peer { attr: usize, file: u32 },
}

/// One file as simulated: a rank of a per-rank job or a stage of an SPMD
/// job.
#[derive(Debug, Clone, PartialEq)]
struct Template {
    stands_for: String,
    nodes: Vec<Node>,
    patches: Vec<Patch>,
}

/// Per-rank files: where ranks are and which group has which id.
#[derive(Debug, Clone, PartialEq)]
struct Ranks {
    placement: Placement,
    /// Per-stage templates (SPMD): the template of each stage; per-rank
    /// templates: `None` (file i is rank i).
    stage_template: Option<Vec<u32>>,
    /// Template file → the stage (SPMD) or rank it stands for.
    template_index: Vec<u32>,
    /// Collective groups by (kind, members): their `pg_name` ids (1, 2,
    /// ...; a group of every rank has none: ASTRA-sim's default).
    groups: BTreeMap<(GroupKind, Vec<u32>), u32>,
}

/// The Chakra files of a simulated timeline: [`ChakraExport::file`] makes
/// each on demand (a job of a thousand ranks is not held in memory at once).
#[derive(Debug, Clone, PartialEq)]
pub struct ChakraExport {
    templates: Vec<Template>,
    ranks: Option<Ranks>,
    /// Assumptions made.
    pub warnings: Vec<String>,
}

impl ChakraExport {
    /// How many `.et` files (ASTRA-sim's NPU count).
    pub fn len(&self) -> u32 {
        match &self.ranks {
            Some(r) => r.placement.parallel.world() as u32,
            None => self.templates.len() as u32,
        }
    }

    /// Whether there is no file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// File `i` (the rank ASTRA-sim gives it): what it stands for and its
    /// bytes.
    pub fn file(&self, i: u32) -> (String, Vec<u8>) {
        let meta = GlobalMetadata {
            version: SCHEMA_VERSION.to_string(),
            attr: vec![string_attr("producer", "trainscope")],
        };
        let Some(ranks) = &self.ranks else {
            let t = &self.templates[i as usize];
            return (t.stands_for.clone(), encode(&meta, &t.nodes));
        };
        let coords = ranks.placement.coords_of(i);
        let ti = match &ranks.stage_template {
            Some(by_stage) => by_stage[coords.pp as usize],
            None => i,
        };
        let t = &self.templates[ti as usize];
        let mut nodes = t.nodes.clone();
        for (node, patch) in nodes.iter_mut().zip(&t.patches) {
            match *patch {
                Patch::None => {}
                Patch::Coll(kind) => {
                    let members = group_members(&ranks.placement, i, kind);
                    if let Some(id) = ranks.groups.get(&(kind, members)) {
                        node.attr.push(string_attr("pg_name", &id.to_string()));
                    }
                }
                Patch::Peer { attr, file } => {
                    let peer = match &ranks.stage_template {
                        Some(_) => ranks.placement.rank_of(Coords {
                            pp: ranks.template_index[file as usize],
                            ..coords
                        }),
                        None => ranks.template_index[file as usize],
                    };
                    if let Some(a) = node.attr.get_mut(attr) {
                        a.value = Some(Value::Int32Val(i32::try_from(peer).unwrap_or(i32::MAX)));
                    }
                }
            }
        }
        let stands_for = match &ranks.stage_template {
            Some(_) => format!("rank {i} ({})", t.stands_for),
            None => t.stands_for.clone(),
        };
        (stands_for, encode(&meta, &nodes))
    }

    /// Every file, in order (small jobs and tests; see [`ChakraExport::file`]).
    pub fn files(&self) -> Vec<(u32, String, Vec<u8>)> {
        (0..self.len())
            .map(|i| {
                let (s, b) = self.file(i);
                (i, s, b)
            })
            .collect()
    }

    /// ASTRA-sim's `--comm-group-configuration` JSON: each group id the
    /// files' `pg_name`s use and its ranks; `None` when no collective names
    /// a group.
    pub fn comm_groups_json(&self) -> Option<String> {
        let ranks = self.ranks.as_ref()?;
        if ranks.groups.is_empty() {
            return None;
        }
        let mut by_id: Vec<(u32, &Vec<u32>)> =
            ranks.groups.iter().map(|((_, m), id)| (*id, m)).collect();
        by_id.sort_unstable();
        let mut out = String::from("{\n");
        for (n, (id, members)) in by_id.iter().enumerate() {
            let list: Vec<String> = members.iter().map(u32::to_string).collect();
            out.push_str(&format!(
                "  \"{id}\": [{}]{}\n",
                list.join(", "),
                if n + 1 < by_id.len() { "," } else { "" }
            ));
        }
        out.push_str("}\n");
        Some(out)
    }
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

/// The group of a simulated collective span (`CollOther` is the one
/// collective between pipeline stages: the tied-embedding all-reduce of
/// the first and last stage).
fn group_of(kind: SpanKind) -> Option<GroupKind> {
    GroupKind::of_collective_span(kind)
        .or_else(|| (kind == SpanKind::CollOther).then_some(GroupKind::Pp))
}

/// The ranks of `rank`'s group of kind `kind`: the placement's groups,
/// and for `Pp` (the embedding all-reduce) the first and last stages'
/// ranks at the same TP and DP index.
fn group_members(placement: &Placement, rank: u32, kind: GroupKind) -> Vec<u32> {
    if kind != GroupKind::Pp {
        return placement.group_members(rank, kind);
    }
    let c = placement.coords_of(rank);
    let last = placement.parallel.pp.saturating_sub(1);
    let mut v = vec![
        placement.rank_of(Coords { pp: 0, ..c }),
        placement.rank_of(Coords { pp: last, ..c }),
    ];
    v.dedup();
    v
}

fn micros(ns: u64) -> u64 {
    ns / 1000 + u64::from(ns % 1000 >= 500)
}

/// Write `timeline` (of a job with `parallel`, ranks placed in `order`) as
/// Chakra files (see the module documentation).
pub fn write_timeline(
    timeline: &Timeline,
    parallel: Parallelism,
    order: PlacementOrder,
) -> ChakraExport {
    let mut warnings = Vec::new();
    // Lane groups in lane order: (group kind, group) → file index.
    let mut groups: BTreeMap<(u8, u32), u32> = BTreeMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut lane_file: Vec<u32> = Vec::new();
    // Per file: the stage (SPMD) or rank it stands for.
    let mut file_index: Vec<u32> = Vec::new();
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
            file_index.push(if key.0 == 0 { lane.group } else { lane.stage });
            next
        });
        lane_file.push(idx);
    }
    let world = parallel.world();
    if spmd && world > MAX_RANK_FILES {
        warnings.push(format!(
            "the job is simulated per stage and has {world} ranks, more than the {MAX_RANK_FILES} files written one per rank: one file per stage ({} files) stands for all ranks, its collectives without `pg_name` (over every rank); run ASTRA-sim with {} NPUs",
            groups.len(),
            groups.len()
        ));
    }
    // Per file: spans (lane, index) in start order.
    let nfiles = groups.len();
    let mut per_file: Vec<Vec<SpanRef>> = vec![Vec::new(); nfiles];
    let mut skipped_waits = 0u64;
    let mut skipped_launches = 0u64;
    for (li, l) in timeline.lanes().iter().enumerate() {
        let lane = li as u32;
        for (si, s) in timeline.spans(lane).iter().enumerate() {
            if s.kind == SpanKind::Wait {
                skipped_waits += 1;
                continue;
            }
            if l.stream == Stream::Host {
                skipped_launches += 1;
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
    if skipped_launches > 0 {
        warnings.push(format!(
            "{skipped_launches} host launch span(s) are not written: Chakra ETs carry the device's work, so the files replay like the job without its host model (--host-launch-us 0)"
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
    let mut templates = Vec::with_capacity(nfiles);
    let mut unpaired = 0u64;
    for (fi, mut refs) in per_file.into_iter().enumerate() {
        // Start order; at one start, transfers before the rest: ASTRA-sim
        // issues ready nodes lowest id first and keeps one communication
        // node (receives aside) in flight per rank, so a collective that
        // waits for its peers must not hold the slot a send they wait for
        // needs (a tied embedding's all-reduce beside a stage's last
        // gradient send deadlocked every rank).
        refs.sort_by_key(|r| {
            let s = timeline.span(*r).map_or(0, |s| s.start_ns);
            (s, !peer.contains_key(r), r.lane, r.index)
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
        // The latest send so far: each collective also waits for it
        // (`ctrl_deps`), which only states the order ASTRA-sim's one
        // communication slot runs them in anyway.
        let mut last_send: Option<u64> = None;
        let mut nodes = Vec::with_capacity(refs.len());
        let mut patches = Vec::with_capacity(refs.len());
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
            let mut patch = Patch::None;
            match (s.kind, coll_type) {
                (SpanKind::Send | SpanKind::Recv, _) => {
                    let send = s.kind == SpanKind::Send;
                    if send {
                        last_send = Some(id);
                    }
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
                    patch = Patch::Peer {
                        attr: node.attr.len(),
                        file: p,
                    };
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
                    if let Some(send) = last_send.filter(|d| !node.data_deps.contains(d)) {
                        node.ctrl_deps.push(send);
                    }
                    node.attr.push(int_attr("comm_type", ct as i64));
                    node.attr.push(int_attr("comm_size", size));
                    node.attr.push(bool_attr("is_cpu_op", false));
                    node.attr.push(string_attr(
                        "trainscope_group",
                        group.map_or("ALL", GroupKind::name),
                    ));
                    if let Some(g) = group {
                        patch = Patch::Coll(g);
                    }
                }
                _ => {
                    // Compute (and collectives trainscope has no Chakra
                    // type for, kept as their simulated time).
                    node.duration_micros = micros(s.duration_ns);
                    node.attr.push(bool_attr("is_cpu_op", false));
                }
            }
            nodes.push(node);
            patches.push(patch);
        }
        templates.push(Template {
            stands_for: names[fi].clone(),
            nodes,
            patches,
        });
    }
    if unpaired > 0 {
        warnings.push(format!(
            "{unpaired} transfer(s) have no simulated peer: written with the own file as peer and tag -1"
        ));
    }
    let ranks = rank_files(
        &templates,
        &file_index,
        spmd,
        parallel,
        order,
        &mut warnings,
    );
    ChakraExport {
        templates,
        ranks,
        warnings,
    }
}

/// How the templates become one file per world rank, with the collective
/// groups they name: an SPMD job's stage templates repeated over the ranks
/// of each stage (up to [`MAX_RANK_FILES`]), a per-rank job's files when
/// they are every rank of the world in order. `None` (files as simulated,
/// collectives without `pg_name`) otherwise, with a warning.
fn rank_files(
    templates: &[Template],
    file_index: &[u32],
    spmd: bool,
    parallel: Parallelism,
    order: PlacementOrder,
    warnings: &mut Vec<String>,
) -> Option<Ranks> {
    let world = parallel.world();
    let placement = Placement::new(parallel, order, 1);
    let stage_template = if spmd {
        if world > MAX_RANK_FILES {
            return None;
        }
        let by_stage: Option<Vec<u32>> = (0..parallel.pp)
            .map(|st| file_index.iter().position(|s| *s == st).map(|i| i as u32))
            .collect();
        match by_stage {
            Some(v) => Some(v),
            None => {
                warnings.push(format!(
                    "not every one of the {} stages was simulated: one file per simulated stage, collectives without `pg_name`",
                    parallel.pp
                ));
                return None;
            }
        }
    } else {
        let all: Vec<u32> = (0..templates.len() as u32).collect();
        if templates.len() as u64 != world || file_index != all.as_slice() {
            if templates
                .iter()
                .any(|t| t.patches.iter().any(|p| matches!(p, Patch::Coll(_))))
            {
                warnings.push(format!(
                    "the files are {} of the {world} ranks: collectives carry no `pg_name` and run over every file in ASTRA-sim",
                    templates.len()
                ));
            }
            return None;
        }
        None
    };
    let mut seen: BTreeMap<(GroupKind, Vec<u32>), u32> = BTreeMap::new();
    for rank in 0..world as u32 {
        let t = match &stage_template {
            Some(by_stage) => by_stage[placement.coords_of(rank).pp as usize],
            None => rank,
        };
        let kinds: std::collections::BTreeSet<GroupKind> = templates[t as usize]
            .patches
            .iter()
            .filter_map(|p| match p {
                Patch::Coll(k) => Some(*k),
                _ => None,
            })
            .collect();
        for kind in kinds {
            let members = group_members(&placement, rank, kind);
            if members.len() as u64 != world {
                seen.insert((kind, members), 0);
            }
        }
    }
    for (id, v) in seen.values_mut().enumerate() {
        *v = id as u32 + 1;
    }
    Some(Ranks {
        placement,
        stage_template,
        template_index: file_index.to_vec(),
        groups: seen,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::chakra::{parse, schema::Value, NodeWork};
    use crate::timeline::{Lane, Span, TimelineBuilder};
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
            cp: 1,
            etp: None,
            dp_shard: 0,
        }
    }

    #[test]
    fn written_files_carry_the_attributes_astra_sim_requires() {
        let ex = write_timeline(&timeline(), parallel(), PlacementOrder::default());
        assert_eq!(ex.len(), 2);
        for (_, _, bytes) in &ex.files() {
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
        let ex = write_timeline(&timeline(), parallel(), PlacementOrder::default());
        let (_, _, bytes) = &ex.files()[1];
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
        let run = crate::formats::chakra::to_run(&[t], None);
        let (rj, _) = chakra_job(&run, true).unwrap();
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
        tb.flow(crate::timeline::Flow {
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
            cp: 1,
            etp: None,
            dp_shard: 0,
        };
        let ex = write_timeline(&tb.build(), p, PlacementOrder::default());
        let expect = [
            (NodeType::CommSendNode, "comm_dst", 1),
            (NodeType::CommRecvNode, "comm_src", 0),
        ];
        for ((_, _, bytes), (ty, peer, value)) in ex.files().iter().zip(expect) {
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

    /// Llama 3.2 1B at TP x PP x DP (global batch 8, 1,024 tokens),
    /// simulated on H100s and written as Chakra.
    fn written_llama_1b(tp: u32, pp: u32, dp: u32) -> ChakraExport {
        use crate::hardware::gpu_preset;
        use crate::job::{run::run_model, ModelJob, TrainingSetup};
        let setup = TrainingSetup {
            tp,
            pp,
            dp: Some(dp),
            global_batch_size: Some(8),
            seq_length: 1024,
            ..TrainingSetup::default()
        };
        let model = crate::model::presets::preset("llama3.2-1b").unwrap();
        let job = ModelJob::new(model, setup, gpu_preset("H100").unwrap(), None).unwrap();
        let out = run_model(&job, &crate::engine::SimConfig::default()).unwrap();
        write_timeline(
            &out.run.result.timeline,
            out.run.parallel,
            PlacementOrder::default(),
        )
    }

    #[test]
    fn a_stage_simulated_job_is_written_per_rank_with_its_groups() {
        // Llama 3.2 1B, PP 2 x DP 2 (Megatron placement: rank = dp + 2 pp).
        let ex = written_llama_1b(1, 2, 2);
        assert_eq!(ex.len(), 4, "one file per rank");
        assert_eq!(
            ex.comm_groups_json().unwrap(),
            "{\n  \"1\": [0, 1],\n  \"2\": [2, 3],\n  \"3\": [0, 2],\n  \"4\": [1, 3]\n}\n"
        );
        for rank in 0..4u32 {
            let (what, bytes) = ex.file(rank);
            assert_eq!(what, format!("rank {rank} (stage {})", rank / 2));
            let mut buf: &[u8] = &bytes;
            GlobalMetadata::decode_length_delimited(&mut buf).unwrap();
            let (mut colls, mut transfers) = (0, 0);
            let peer = if rank < 2 { rank + 2 } else { rank - 2 } as i32;
            while !buf.is_empty() {
                let n = Node::decode_length_delimited(&mut buf).unwrap();
                let attr = |name: &str| {
                    n.attr
                        .iter()
                        .find(|a| a.name == name)
                        .and_then(|a| a.value.clone())
                };
                match NodeType::try_from(n.r#type).unwrap() {
                    NodeType::CommCollNode => {
                        // The DP group of this rank (stage 0 → 1, stage 1 →
                        // 2); the tied-embedding all-reduce: the first and
                        // last stages' ranks at its DP index (3, 4).
                        let want = if n.name == "embedding_grad_allreduce" {
                            rank % 2 + 3
                        } else {
                            rank / 2 + 1
                        }
                        .to_string();
                        assert_eq!(attr("pg_name"), Some(Value::StringVal(want)), "{}", n.name);
                        colls += 1;
                    }
                    // Transfers go to and come from the same DP index on
                    // the other stage (activations forward, gradients back).
                    NodeType::CommSendNode => {
                        assert_eq!(attr("comm_dst"), Some(Value::Int32Val(peer)));
                        transfers += 1;
                    }
                    NodeType::CommRecvNode => {
                        assert_eq!(attr("comm_src"), Some(Value::Int32Val(peer)));
                        transfers += 1;
                    }
                    _ => {}
                }
            }
            assert!(
                colls > 0 && transfers > 0,
                "rank {rank}: {colls} {transfers}"
            );
        }
        // Only the note that the host's launches are not written.
        assert_eq!(ex.warnings.len(), 1, "{:?}", ex.warnings);
        assert!(ex.warnings[0].contains("host launch"), "{:?}", ex.warnings);
    }

    /// ASTRA-sim issues ready nodes lowest id first with one communication
    /// node (receives aside) in flight per rank: a collective waiting for
    /// its peers must never hold that slot ahead of a send of its own file
    /// (Llama 3.2 1B's tied-embedding all-reduce beside the last stage's
    /// final gradient send deadlocked all 8 ranks). Every collective comes
    /// after the sends that start no later and depends on the latest one.
    #[test]
    fn collectives_never_go_ahead_of_a_send_astra_sim_must_issue_first() {
        // Tied embeddings: the first and last stages all-reduce them.
        assert!(
            crate::model::presets::preset("llama3.2-1b")
                .unwrap()
                .tied_embeddings
        );
        let ex = written_llama_1b(2, 2, 2);
        let mut checked = 0;
        for (_, _, bytes) in &ex.files() {
            let mut buf: &[u8] = bytes;
            GlobalMetadata::decode_length_delimited(&mut buf).unwrap();
            let mut nodes = Vec::new();
            while !buf.is_empty() {
                nodes.push(Node::decode_length_delimited(&mut buf).unwrap());
            }
            let mut last_send: Option<&Node> = None;
            for n in &nodes {
                match NodeType::try_from(n.r#type).unwrap() {
                    NodeType::CommSendNode => last_send = Some(n),
                    NodeType::CommCollNode => {
                        let later_send = nodes.iter().find(|m| {
                            m.r#type == NodeType::CommSendNode as i32
                                && m.id > n.id
                                && m.start_time_micros <= n.start_time_micros
                        });
                        assert!(later_send.is_none(), "{} after a send of its start", n.name);
                        if let Some(s) = last_send {
                            assert!(
                                n.ctrl_deps.contains(&s.id) || n.data_deps.contains(&s.id),
                                "{} does not wait for send {}",
                                n.name,
                                s.id
                            );
                            checked += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
        assert!(checked > 0);
    }
}
