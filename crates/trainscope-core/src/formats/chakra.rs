//! Chakra execution traces (format `chakra-et`, docs/FORMATS.md §2.7): the
//! protobuf `.et` files of mlcommons/chakra that ASTRA-sim replays, one per
//! rank (`NAME.<rank>.et`), each a varint-length-prefixed `GlobalMetadata`
//! message followed by varint-length-prefixed `Node` messages to the end of
//! the file. The schema (`chakra/et_def.proto`, Apache-2.0, licence in
//! `chakra/LICENSE.md`) is mirrored by the hand-written prost messages of
//! [`schema`]; no protobuf compiler runs at build time.
//!
//! Reading ([`parse`]): every node is decoded, located by its byte offset;
//! what ASTRA-sim's workload layer runs is kept:
//! - `GlobalMetadata`: the schema version is its `version` field
//!   (trainscope's writer, ASTRA-sim's example generators) or, as Chakra's
//!   own converters write it (`version` empty), its `schema` string
//!   attribute (`1.0.2-chakra.1.0.0`); detection ([`looks_like`]) is by
//!   structure: such a metadata message, then a `Node` of a known type;
//! - `COMP_NODE`: its `duration_micros` (µs → ns); a compute node priced by
//!   `num_ops` / `tensor_size` alone (ASTRA-sim's roofline) has no time here
//!   and is kept at 0 ns, as is one with neither (ASTRA-sim skips it); CPU
//!   operators (`is_cpu_op`, Chakra's PyTorch converter) run in the rank's
//!   one sequence with the GPU operators; each of the three is one warning
//!   per file, located at its first node;
//! - `COMM_COLL_NODE`: `comm_type` (the schema's `CollectiveCommType`) and
//!   `comm_size` (bytes) as integer attributes (any integer encoding; one
//!   other than `int64_val`, which ASTRA-sim alone reads, is warned about),
//!   optional `pg_name`; the
//!   collectives trainscope simulates (all-reduce, all-gather,
//!   reduce-scatter, all-to-all) are kept, others are skipped with a
//!   warning; a missing or non-integer `comm_type` / `comm_size` is an error
//!   at the node;
//! - `COMM_SEND_NODE` / `COMM_RECV_NODE`: the peer (`comm_dst` of a send,
//!   `comm_src` of a receive), `comm_tag` and `comm_size` (bytes) as
//!   integer attributes (the writer's int32 / int64, as ASTRA-sim's feeder
//!   reads them; any integer encoding is read); a missing, negative or
//!   non-integer one is a warning at the node, which is kept as a 0-ns
//!   no-op; the peers are also a hint for the pipeline layout;
//! - memory and metadata nodes are skipped with a warning;
//! - dependencies (`data_deps` and `ctrl_deps`) must name nodes of the same
//!   file: unknown ids, duplicate ids and cycles are named (ASTRA-sim skips
//!   such nodes silently).
//!
//! [`to_run`] makes one [`MeasuredRun`] of a set of files: ranks from the
//! file names (`.<rank>.et`), else in input order; each rank's kept nodes
//! (with their `start_time_micros` when the file has any, so the measured
//! timeline shows them where the trace put them; collectives, sends and
//! receives have no duration there) in one topological order of their
//! dependencies (ties: sends and receives first, issued as soon as their
//! dependencies allow, then file order), which
//! [`crate::replay::chakra::chakra_job`] replays.
//!
//! Point-to-point transfers (ASTRA-sim's matching): a send on rank A with
//! `comm_dst` B and tag T is matched with a receive on B with `comm_src` A
//! and the same tag; per ordered pair (A, B) and tag, the k-th send in
//! A's file order with the k-th receive in B's. A matched pair is one
//! transfer ([`MeasuredOp::transfer`], the same index on both ops);
//! every op lists the matched sends and receives it depends on
//! ([`MeasuredOp::waits_for`]). Not matched, with a warning naming the
//! node, its rank and why (the first [`UNMATCHED_NAMED`], then a count),
//! and replayed as a 0-ns no-op: a peer without a file in the set or the
//! node's own rank, a send or receive without a partner, a pair whose
//! `comm_size`s differ (both nodes).
//!
//! Process groups: a collective's `pg_name` names a group of ASTRA-sim's
//! communicator-group file (`comm_groups.json`, format
//! `chakra-comm-groups`, read by [`groups`]) given beside the `.et` files;
//! without `pg_name` a collective spans all ranks (ASTRA-sim's rule). With
//! the file, the groups the collectives use are matched to a Megatron
//! layout TP x DP x PP (EP) of the set's world ([`groups::infer_layout`]):
//! the run gets that parallel configuration, each rank its stage, and
//! each collective the group kind (TP, DP, EP, DP across experts, the
//! first and last stages' embedding group) whose members its group holds,
//! so it is simulated over exactly those ranks. Warned and resolved:
//! a `pg_name` the file lacks (over all ranks), a group of one rank (its
//! collectives take 0 ns), ranks of the file outside the set (errors
//! located in the file), groups that fit no layout (the group is named),
//! collectives over all ranks that are no group of the layout, a stage
//! without a file: in each of the last four cases every collective is
//! simulated over the whole world as one data-parallel group, as without
//! the file, where `pg_name`s get a warning with the hint to add the file.
//!
//! Writing ([`encode`]) frames messages the same way; the conversion of a
//! simulated timeline into nodes is [`crate::replay::chakra`].

pub mod groups;
pub mod reuse;
pub mod schema;

use crate::diag::{Diagnostic, Location};
use crate::formats::lex::DiagSink;
use crate::workload::Format;
use crate::workload::{
    CommGroup, CommKind, MeasuredOp, MeasuredRun, OpKind, OpValues, ParallelConfig, RankCopy,
    RankTrace,
};
use prost::Message;
use schema::{AttributeProto, CollectiveCommType, GlobalMetadata, Node, NodeType, Value};
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// The schema version the writer puts in `GlobalMetadata.version`.
pub const SCHEMA_VERSION: &str = "0.0.4";

/// What a kept node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeWork {
    /// Compute for `duration_ns`.
    Compute,
    /// A collective of `size_bytes` (Chakra's `comm_size`).
    Collective(CommKind),
    /// A send of `size_bytes` to rank `peer` (`comm_dst`) with `comm_tag`.
    Send { peer: u32, tag: i64 },
    /// A receive of `size_bytes` from rank `peer` (`comm_src`) with
    /// `comm_tag`.
    Recv { peer: u32, tag: i64 },
}

/// One kept node of a rank's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChakraNode {
    pub id: u64,
    pub name: String,
    pub work: NodeWork,
    /// Run time, ns (`duration_micros` x 1000).
    pub duration_ns: u64,
    /// `start_time_micros` x 1000, when the file times its nodes (some node
    /// has a non-zero start; proto3 cannot tell 0 from absent).
    pub start_ns: Option<u64>,
    /// `comm_size`, bytes (collectives, sends and receives).
    pub size_bytes: u64,
    /// `pg_name`, when given.
    pub pg_name: Option<String>,
    /// `trainscope_group` (trainscope's writer names each collective's
    /// group kind: `TP`, `DP`, `PP`, `EP`, `DP_EP`), when given: a hint
    /// for the layout of the groups.
    pub group_hint: Option<String>,
    /// Ids this node waits for (data and control dependencies, kept nodes
    /// only), ascending.
    pub deps: Vec<u64>,
    /// Byte offset of the node's length prefix in the file.
    pub offset: u64,
}

/// One parsed `.et` file.
#[derive(Debug, Clone)]
pub struct ChakraTrace {
    pub file: String,
    /// Rank from the file name (`NAME.<rank>.et`), when it has one.
    pub rank: Option<u32>,
    /// The schema version: `GlobalMetadata.version`, else its `schema`
    /// attribute ([`stated_version`]; empty when neither states one).
    pub version: String,
    /// Kept nodes in one topological order (ties: file order); empty for
    /// a file read as a copy of another's program ([`ChakraTrace::copy`]:
    /// [`ChakraTrace::node_count`], [`ChakraTrace::node`] and
    /// [`ChakraTrace::all_nodes`] read either).
    pub nodes: Vec<ChakraNode>,
    /// A file read as a copy of an earlier file's program
    /// ([`reuse::ParseCache`]): its nodes are that file's with its own
    /// offsets, `pg_name`s and peers; None for a file parsed in full.
    pub copy: Option<TraceCopy>,
    /// Nodes in the file.
    pub nodes_read: u64,
    /// Nodes skipped (unsupported type or collective, errors, cycles).
    pub nodes_skipped: u64,
    /// Peers of the point-to-point nodes (`comm_dst` of sends, `comm_src`
    /// of receives), ascending: a hint for the pipeline layout.
    pub p2p_peers: Vec<u32>,
    pub diagnostics: Vec<Diagnostic>,
}

/// The nodes of a file read as a copy of another file's program: the
/// template's nodes with the copy's own byte offsets and rank-specific
/// values (see [`reuse`]).
#[derive(Debug, Clone)]
pub struct TraceCopy {
    /// The template's full parse (shared by its copies).
    pub template: std::sync::Arc<ChakraTrace>,
    /// Each node's byte offset in this file (the template's node order;
    /// shared by the copies laid out alike).
    pub offsets: std::sync::Arc<[u64]>,
    /// Nodes whose `pg_name` differs from the template's: (node index,
    /// value), ascending (a value is shared by the nodes and files that
    /// name it alike).
    pub pg_names: Vec<(u32, Option<std::sync::Arc<str>>)>,
    /// Sends and receives whose peer differs from the template's: (node
    /// index, peer), ascending.
    pub peers: Vec<(u32, u32)>,
}

impl TraceCopy {
    /// Node `i` of the copy (the template's with this file's values).
    pub fn node(&self, i: usize) -> std::borrow::Cow<'_, ChakraNode> {
        let t = &self.template.nodes[i];
        let i = i as u32;
        let pg = self.pg_names.binary_search_by_key(&i, |p| p.0).ok();
        let peer = self.peers.binary_search_by_key(&i, |p| p.0).ok();
        if pg.is_none() && peer.is_none() && self.offsets[i as usize] == t.offset {
            return std::borrow::Cow::Borrowed(t);
        }
        let mut n = t.clone();
        n.offset = self.offsets[i as usize];
        if let Some(k) = pg {
            n.pg_name = self.pg_names[k].1.as_deref().map(str::to_string);
        }
        if let Some(k) = peer {
            if let NodeWork::Send { peer, .. } | NodeWork::Recv { peer, .. } = &mut n.work {
                *peer = self.peers[k].1;
            }
        }
        std::borrow::Cow::Owned(n)
    }
}

impl ChakraTrace {
    /// Number of kept nodes.
    pub fn node_count(&self) -> usize {
        match &self.copy {
            Some(c) => c.template.nodes.len(),
            None => self.nodes.len(),
        }
    }

    /// Kept node `i` (`i < node_count()`).
    pub fn node(&self, i: usize) -> std::borrow::Cow<'_, ChakraNode> {
        match &self.copy {
            Some(c) => c.node(i),
            None => std::borrow::Cow::Borrowed(&self.nodes[i]),
        }
    }

    /// Every kept node, in order (a copy's made from its template).
    pub fn all_nodes(&self) -> std::borrow::Cow<'_, [ChakraNode]> {
        match &self.copy {
            Some(c) => (0..c.template.nodes.len())
                .map(|i| c.node(i).into_owned())
                .collect::<Vec<_>>()
                .into(),
            None => std::borrow::Cow::Borrowed(&self.nodes),
        }
    }
}

/// Two traces are equal when they read the same: a copy equals the full
/// parse of its file.
impl PartialEq for ChakraTrace {
    fn eq(&self, other: &Self) -> bool {
        self.file == other.file
            && self.rank == other.rank
            && self.version == other.version
            && self.nodes_read == other.nodes_read
            && self.nodes_skipped == other.nodes_skipped
            && self.p2p_peers == other.p2p_peers
            && self.diagnostics == other.diagnostics
            && self.all_nodes() == other.all_nodes()
    }
}

/// Append `msg` to `out` with its varint length prefix.
pub fn encode_delimited<M: Message>(msg: &M, out: &mut Vec<u8>) {
    // Writing into a Vec cannot run out of space.
    let _ = msg.encode_length_delimited(out);
}

/// A whole `.et` file: metadata then nodes, each length-prefixed.
pub fn encode(meta: &GlobalMetadata, nodes: &[Node]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_delimited(meta, &mut out);
    for n in nodes {
        encode_delimited(n, &mut out);
    }
    out
}

/// Read a varint at `pos`: (value, bytes used), or None when cut or too long.
fn varint(bytes: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..10 {
        let b = *bytes.get(pos + i)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The next length-delimited message body at `pos`: (body range end, body
/// start), or a description of what is wrong.
fn frame(bytes: &[u8], pos: usize) -> Result<(usize, usize), String> {
    let (len, used) = varint(bytes, pos).ok_or("the length prefix is cut or malformed")?;
    let start = pos + used;
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| start.checked_add(l))
        .filter(|e| *e <= bytes.len())
        .ok_or_else(|| {
            format!(
                "the message claims {len} bytes but only {} remain (the file is cut)",
                bytes.len() - start
            )
        })?;
    Ok((end, start))
}

/// A location for a byte offset of a binary file (line 1, column = offset + 1).
fn at(file: &str, offset: usize, what: &str) -> Location {
    Location {
        file: file.to_string(),
        line: 1,
        column: u32::try_from(offset + 1).unwrap_or(u32::MAX),
        text: format!("byte offset {offset}: {what}"),
        text_column: None,
    }
}

/// The schema version a `GlobalMetadata` states: its `version` field
/// (trainscope's writer, ASTRA-sim's example generators: `0.0.4`), else
/// its `schema` string attribute (Chakra's own converters leave `version`
/// empty and write e.g. `1.0.2-chakra.1.0.0` there); None when neither
/// holds a version (a digit first, then at most 64 printable ASCII
/// characters without spaces, with a dot).
pub fn stated_version(meta: &GlobalMetadata) -> Option<String> {
    let plausible = |v: &str| {
        let b = v.as_bytes();
        b.first().is_some_and(u8::is_ascii_digit)
            && b.len() <= 64
            && b.iter().all(u8::is_ascii_graphic)
            && b.contains(&b'.')
    };
    if plausible(&meta.version) {
        return Some(meta.version.clone());
    }
    meta.attr
        .iter()
        .filter(|a| a.name == "schema")
        .find_map(|a| match &a.value {
            Some(Value::StringVal(v)) if plausible(v) => Some(v.clone()),
            _ => None,
        })
}

/// Whether `bytes` look like a Chakra ET file, by structure: a
/// `GlobalMetadata` that states a schema version ([`stated_version`]:
/// its `version` field or a `schema` attribute), then a `Node` of a known
/// type. (confidence, reason).
pub fn looks_like(bytes: &[u8]) -> Option<(u8, String)> {
    let (end, start) = frame(bytes, 0).ok()?;
    let meta = GlobalMetadata::decode(&bytes[start..end]).ok()?;
    let version = stated_version(&meta)?;
    let stated = if meta.version == version {
        format!("version {version}")
    } else {
        format!("schema {version}")
    };
    if end == bytes.len() {
        return Some((
            60,
            format!("a Chakra GlobalMetadata ({stated}) and no nodes"),
        ));
    }
    let (nend, nstart) = frame(bytes, end).ok()?;
    let node = Node::decode(&bytes[nstart..nend]).ok()?;
    NodeType::try_from(node.r#type)
        .ok()
        .filter(|t| *t != NodeType::InvalidNode)?;
    Some((
        100,
        format!("a Chakra GlobalMetadata ({stated}) followed by a Node"),
    ))
}

/// The rank in a file name `NAME.<rank>.et` (directories ignored).
pub fn rank_of_file_name(file: &str) -> Option<u32> {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = base.strip_suffix(".et")?;
    let (_, digits) = stem.rsplit_once('.')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// An integer attribute value (any of the schema's integer encodings); a
/// float, string or list is `Err(kind)`.
pub fn int_value(a: &AttributeProto) -> Result<i128, &'static str> {
    match &a.value {
        Some(Value::Int32Val(v)) | Some(Value::Sint32Val(v)) | Some(Value::Sfixed32Val(v)) => {
            Ok(i128::from(*v))
        }
        Some(Value::Int64Val(v)) | Some(Value::Sint64Val(v)) | Some(Value::Sfixed64Val(v)) => {
            Ok(i128::from(*v))
        }
        Some(Value::Uint32Val(v)) | Some(Value::Fixed32Val(v)) => Ok(i128::from(*v)),
        Some(Value::Uint64Val(v)) | Some(Value::Fixed64Val(v)) => Ok(i128::from(*v)),
        Some(Value::DoubleVal(_)) | Some(Value::FloatVal(_)) => Err("a float"),
        Some(Value::StringVal(_)) => Err("a string"),
        Some(Value::BoolVal(_)) => Err("a bool"),
        None => Err("empty"),
        Some(_) => Err("a list or bytes"),
    }
}

fn attr<'a>(node: &'a Node, name: &str) -> Option<&'a AttributeProto> {
    node.attr.iter().find(|a| a.name == name)
}

fn type_name(t: i32) -> String {
    NodeType::try_from(t).map_or(format!("unknown type {t}"), |t| t.as_str_name().to_string())
}

/// The trainscope collective of a Chakra `comm_type`, or None when
/// trainscope does not simulate it.
pub fn collective_of(comm_type: i128) -> Option<CommKind> {
    let t = CollectiveCommType::try_from(i32::try_from(comm_type).ok()?).ok()?;
    match t {
        CollectiveCommType::AllReduce => Some(CommKind::AllReduce),
        CollectiveCommType::AllGather => Some(CommKind::AllGather),
        CollectiveCommType::ReduceScatter => Some(CommKind::ReduceScatter),
        CollectiveCommType::AllToAll => Some(CommKind::AllToAll),
        _ => None,
    }
}

/// Nodes of one kind, (id, byte offset) each, in file order.
type NodeList = Vec<(u64, usize)>;

/// Compute nodes whose time or placement trainscope does not model as
/// ASTRA-sim would, (id, byte offset) each: reported once per kind.
#[derive(Default)]
struct ComputeNotes {
    /// No `duration_micros`, a positive `num_ops` (ASTRA-sim's roofline
    /// prices these from `num_ops` / `tensor_size`).
    priced_by_ops: NodeList,
    /// Neither `duration_micros` nor `num_ops` (ASTRA-sim skips them).
    untimed: NodeList,
    /// `is_cpu_op` true (ASTRA-sim runs CPU and GPU operators on separate
    /// resources).
    cpu_ops: NodeList,
}

impl ComputeNotes {
    /// One warning per kind, located at its first node, naming the first
    /// ids and the count.
    fn report(&self, file: &str, sink: &mut DiagSink) {
        let cases: [(&NodeList, &str, &str); 3] = [
            (
                &self.priced_by_ops,
                "have no duration_micros, only num_ops (ASTRA-sim prices them with its roofline model from num_ops and tensor_size): trainscope has no roofline for Chakra nodes and runs them as 0 ns",
                "the simulated iteration leaves out their compute; give the nodes duration_micros (e.g. measured) to time them",
            ),
            (
                &self.untimed,
                "have neither duration_micros nor num_ops: run as 0 ns, keeping their dependencies (ASTRA-sim skips such nodes)",
                "Chakra's PyTorch converter writes a node's exclusive GPU time here; a trace collected without it has no compute time to replay",
            ),
            (
                &self.cpu_ops,
                "are CPU operators (is_cpu_op): run in the rank's one sequence with its GPU operators, in dependency order (ASTRA-sim runs one CPU and one GPU operator at a time side by side)",
                "a rank whose CPU and GPU work overlapped replays longer here than it ran",
            ),
        ];
        for (nodes, what, hint) in cases {
            let Some((first, off)) = nodes.first() else {
                continue;
            };
            let shown: Vec<String> = nodes.iter().take(5).map(|(id, _)| id.to_string()).collect();
            sink.push(
                Diagnostic::warning(format!(
                    "`{file}`: {} compute node(s) (ids {}{}) {what}",
                    nodes.len(),
                    shown.join(", "),
                    if nodes.len() > 5 { ", ..." } else { "" }
                ))
                .with_hint(hint)
                .at(at(file, *off, &format!("node {first}"))),
            );
        }
    }
}

/// Parse one `.et` file (see the module documentation).
pub fn parse(file: &str, bytes: &[u8]) -> ChakraTrace {
    let mut sink = DiagSink::default();
    let mut trace = ChakraTrace {
        file: file.to_string(),
        rank: rank_of_file_name(file),
        version: String::new(),
        nodes: Vec::new(),
        copy: None,
        nodes_read: 0,
        nodes_skipped: 0,
        p2p_peers: Vec::new(),
        diagnostics: Vec::new(),
    };
    let meta_end =
        match frame(bytes, 0) {
            Ok((end, start)) => match GlobalMetadata::decode(&bytes[start..end]) {
                Ok(m) => {
                    trace.version = stated_version(&m).unwrap_or(m.version);
                    end
                }
                Err(e) => {
                    sink.push(
                        Diagnostic::error(format!(
                            "`{file}`: the GlobalMetadata message does not decode ({e})"
                        ))
                        .at(at(file, 0, "GlobalMetadata")),
                    );
                    trace.diagnostics = sink.finish(file);
                    return trace;
                }
            },
            Err(why) => {
                sink.push(
                    Diagnostic::error(format!("`{file}`: no GlobalMetadata message: {why}"))
                        .at(at(file, 0, "GlobalMetadata")),
                );
                trace.diagnostics = sink.finish(file);
                return trace;
            }
        };
    // Decode every node, keeping (offset, node).
    let mut raw: Vec<(usize, Node)> = Vec::new();
    let mut pos = meta_end;
    while pos < bytes.len() {
        let (end, start) = match frame(bytes, pos) {
            Ok(f) => f,
            Err(why) => {
                sink.push(
                    Diagnostic::error(format!(
                        "`{file}`: the node at byte offset {pos} is cut: {why}; the {} node(s) before it are kept",
                        raw.len()
                    ))
                    .at(at(file, pos, "node")),
                );
                break;
            }
        };
        trace.nodes_read += 1;
        match Node::decode(&bytes[start..end]) {
            Ok(n) => raw.push((pos, n)),
            Err(e) => {
                trace.nodes_skipped += 1;
                sink.push(
                    Diagnostic::error(format!(
                        "`{file}`: the node at byte offset {pos} does not decode ({e}): skipped"
                    ))
                    .at(at(file, pos, "node")),
                );
            }
        }
        pos = end;
    }
    let timed = raw.iter().any(|(_, n)| n.start_time_micros > 0);
    // Keep what trainscope runs.
    let mut kept: Vec<ChakraNode> = Vec::new();
    let mut all_ids: BTreeMap<u64, usize> = BTreeMap::new();
    let mut skipped_by_type: BTreeMap<String, u64> = BTreeMap::new();
    let mut peers: BTreeSet<u32> = BTreeSet::new();
    let mut compute_notes = ComputeNotes::default();
    for (offset, n) in &raw {
        let off = *offset;
        if let Some(first) = all_ids.get(&n.id) {
            trace.nodes_skipped += 1;
            sink.push(
                Diagnostic::error(format!(
                    "`{file}`: node id {} at byte offset {off} repeats the node at byte offset {first}: skipped",
                    n.id
                ))
                .at(at(file, off, &format!("node {}", n.id))),
            );
            continue;
        }
        all_ids.insert(n.id, off);
        let deps: Vec<u64> = n
            .data_deps
            .iter()
            .chain(&n.ctrl_deps)
            .copied()
            .collect::<BTreeSet<u64>>()
            .into_iter()
            .collect();
        let base = ChakraNode {
            id: n.id,
            name: n.name.clone(),
            work: NodeWork::Compute,
            duration_ns: n.duration_micros.saturating_mul(1000),
            start_ns: timed.then(|| n.start_time_micros.saturating_mul(1000)),
            size_bytes: 0,
            pg_name: None,
            group_hint: None,
            deps,
            offset: off as u64,
        };
        let located =
            |msg: String| Diagnostic::error(msg).at(at(file, off, &format!("node {}", n.id)));
        match NodeType::try_from(n.r#type) {
            Ok(NodeType::CompNode) => {
                // As Chakra's feeder reads them: `num_ops` (int64_val),
                // `is_cpu_op` (bool_val); any integer encoding of num_ops.
                let num_ops = attr(n, "num_ops")
                    .and_then(|a| int_value(a).ok())
                    .unwrap_or(0);
                if n.duration_micros == 0 {
                    let list = if num_ops > 0 {
                        &mut compute_notes.priced_by_ops
                    } else {
                        &mut compute_notes.untimed
                    };
                    list.push((n.id, off));
                }
                if attr(n, "is_cpu_op")
                    .is_some_and(|a| matches!(a.value, Some(Value::BoolVal(true))))
                {
                    compute_notes.cpu_ops.push((n.id, off));
                }
                kept.push(base);
            }
            Ok(NodeType::CommCollNode) => {
                let ty = match attr(n, "comm_type").map(int_value) {
                    Some(Ok(v)) => v,
                    Some(Err(kind)) => {
                        trace.nodes_skipped += 1;
                        sink.push(located(format!(
                            "`{file}`: collective node {} has comm_type as {kind}, not an integer: skipped",
                            n.id
                        )));
                        continue;
                    }
                    None => {
                        trace.nodes_skipped += 1;
                        sink.push(located(format!(
                            "`{file}`: collective node {} has no comm_type attribute: skipped",
                            n.id
                        )));
                        continue;
                    }
                };
                let size = match attr(n, "comm_size").map(int_value) {
                    Some(Ok(v)) if v >= 0 => u64::try_from(v).unwrap_or(u64::MAX),
                    Some(Ok(v)) => {
                        trace.nodes_skipped += 1;
                        sink.push(located(format!(
                            "`{file}`: collective node {} has a negative comm_size {v}: skipped",
                            n.id
                        )));
                        continue;
                    }
                    Some(Err(kind)) => {
                        trace.nodes_skipped += 1;
                        sink.push(located(format!(
                            "`{file}`: collective node {} has comm_size as {kind}, not an integer: skipped",
                            n.id
                        )));
                        continue;
                    }
                    None => {
                        trace.nodes_skipped += 1;
                        sink.push(located(format!(
                            "`{file}`: collective node {} has no comm_size attribute: skipped",
                            n.id
                        )));
                        continue;
                    }
                };
                // ASTRA-sim's feeder reads both from `int64_val` only.
                for name in ["comm_type", "comm_size"] {
                    if attr(n, name).is_some_and(|a| !matches!(a.value, Some(Value::Int64Val(_)))) {
                        sink.push(
                            Diagnostic::warning(format!(
                                "`{file}`: collective node {} has {name} in another integer encoding than int64: read here, but ASTRA-sim reads int64_val only (it would see 0)",
                                n.id
                            ))
                            .at(at(file, off, &format!("node {}", n.id))),
                        );
                    }
                }
                let Some(kind) = collective_of(ty) else {
                    trace.nodes_skipped += 1;
                    let name = i32::try_from(ty)
                        .ok()
                        .and_then(|t| CollectiveCommType::try_from(t).ok())
                        .map_or(format!("unknown comm_type {ty}"), |t| {
                            t.as_str_name().to_string()
                        });
                    sink.push(
                        Diagnostic::warning(format!(
                            "`{file}`: collective node {} is {name}, which trainscope does not simulate (all-reduce, all-gather, reduce-scatter, all-to-all): skipped",
                            n.id
                        ))
                        .at(at(file, off, &format!("node {}", n.id))),
                    );
                    continue;
                };
                let string = |name: &str| {
                    attr(n, name).and_then(|a| match &a.value {
                        Some(Value::StringVal(s)) => Some(s.clone()),
                        _ => None,
                    })
                };
                kept.push(ChakraNode {
                    work: NodeWork::Collective(kind),
                    size_bytes: size,
                    pg_name: string("pg_name"),
                    group_hint: string("trainscope_group"),
                    ..base
                });
            }
            Ok(t @ (NodeType::CommSendNode | NodeType::CommRecvNode)) => {
                let send = t == NodeType::CommSendNode;
                let (what, peer_attr) = if send {
                    ("send", "comm_dst")
                } else {
                    ("receive", "comm_src")
                };
                let read = |name: &str, max: i128| match attr(n, name).map(int_value) {
                    Some(Ok(v)) if (0..=max).contains(&v) => Ok(v),
                    Some(Ok(v)) => Err(format!("{name} {v} out of range")),
                    Some(Err(kind)) => Err(format!("{name} as {kind}, not an integer")),
                    None => Err(format!("no {name} attribute")),
                };
                let peer = read(peer_attr, i128::from(u32::MAX));
                let size = read("comm_size", i128::from(u64::MAX));
                let tag = match attr(n, "comm_tag").map(int_value) {
                    Some(Ok(v)) => Ok(i64::try_from(v).unwrap_or(i64::MAX)),
                    Some(Err(kind)) => Err(format!("comm_tag as {kind}, not an integer")),
                    None => Err("no comm_tag attribute".to_string()),
                };
                match (peer, size, tag) {
                    (Ok(peer), Ok(size), Ok(tag)) => {
                        let peer = peer as u32;
                        peers.insert(peer);
                        kept.push(ChakraNode {
                            work: if send {
                                NodeWork::Send { peer, tag }
                            } else {
                                NodeWork::Recv { peer, tag }
                            },
                            duration_ns: 0,
                            size_bytes: size as u64,
                            ..base
                        });
                    }
                    (peer, size, tag) => {
                        let why: Vec<String> = [peer.err(), size.err(), tag.err()]
                            .into_iter()
                            .flatten()
                            .collect();
                        sink.push(
                            Diagnostic::warning(format!(
                                "`{file}`: {what} node {} has {}: replayed as a 0-ns no-op",
                                n.id,
                                why.join(", ")
                            ))
                            .at(at(
                                file,
                                off,
                                &format!("node {}", n.id),
                            )),
                        );
                        kept.push(ChakraNode {
                            duration_ns: 0,
                            ..base
                        });
                    }
                }
            }
            _ => {
                trace.nodes_skipped += 1;
                *skipped_by_type.entry(type_name(n.r#type)).or_insert(0) += 1;
            }
        }
    }
    trace.p2p_peers = peers.into_iter().collect();
    compute_notes.report(file, &mut sink);
    for (t, count) in &skipped_by_type {
        sink.push(Diagnostic::warning(format!(
            "`{file}`: {count} {t} node(s) skipped (trainscope replays compute, collective, send and receive nodes; memory and metadata nodes are not simulated)"
        )));
    }
    // Dependencies: unknown ids are named; deps on skipped (but present)
    // nodes are dropped (they do not delay anything simulated).
    let kept_ids: BTreeMap<u64, usize> = kept.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    for n in &mut kept {
        let mut ok = Vec::with_capacity(n.deps.len());
        for d in &n.deps {
            if kept_ids.contains_key(d) {
                ok.push(*d);
            } else if !all_ids.contains_key(d) {
                let off = n.offset as usize;
                sink.push(
                    Diagnostic::warning(format!(
                        "`{file}`: node {} depends on node {d}, which is not in the file: dependency ignored",
                        n.id
                    ))
                    .at(at(file, off, &format!("node {}", n.id))),
                );
            }
        }
        n.deps = ok;
    }
    // Topological order (Kahn), ties: sends and receives first (issued as
    // soon as their dependencies allow), then file order.
    let p2p = |i: usize| matches!(kept[i].work, NodeWork::Send { .. } | NodeWork::Recv { .. });
    let mut indeg: Vec<usize> = kept.iter().map(|n| n.deps.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); kept.len()];
    for (i, n) in kept.iter().enumerate() {
        for d in &n.deps {
            dependents[kept_ids[d]].push(i);
        }
    }
    let mut ready: BinaryHeap<std::cmp::Reverse<(bool, usize)>> = indeg
        .iter()
        .enumerate()
        .filter(|(_, d)| **d == 0)
        .map(|(i, _)| std::cmp::Reverse((!p2p(i), i)))
        .collect();
    let mut order = Vec::with_capacity(kept.len());
    while let Some(std::cmp::Reverse((_, i))) = ready.pop() {
        order.push(i);
        for &j in &dependents[i] {
            indeg[j] -= 1;
            if indeg[j] == 0 {
                ready.push(std::cmp::Reverse((!p2p(j), j)));
            }
        }
    }
    if order.len() < kept.len() {
        let stuck: Vec<u64> = (0..kept.len())
            .filter(|i| indeg[*i] > 0)
            .map(|i| kept[i].id)
            .collect();
        trace.nodes_skipped += stuck.len() as u64;
        let first = kept
            .iter()
            .find(|n| n.id == stuck[0])
            .map_or(0, |n| n.offset);
        let shown: Vec<String> = stuck.iter().take(10).map(u64::to_string).collect();
        sink.push(
            Diagnostic::error(format!(
                "`{file}`: {} node(s) are in or behind a dependency cycle and never run: {}{}",
                stuck.len(),
                shown.join(", "),
                if stuck.len() > 10 { ", ..." } else { "" }
            ))
            .at(at(file, first as usize, &format!("node {}", stuck[0]))),
        );
    }
    let mut slots: Vec<Option<ChakraNode>> = kept.into_iter().map(Some).collect();
    trace.nodes = order.into_iter().filter_map(|i| slots[i].take()).collect();
    trace.diagnostics = sink.finish(file);
    trace
}

/// What the groups of a set resolve to: the layout (None: every
/// collective over all ranks as one DP group) and the groups of one rank.
struct Resolved {
    layout: Option<groups::Layout>,
    single: BTreeSet<String>,
}

/// Map the collectives' `pg_name`s to groups of a Megatron layout (see
/// [`to_run`]), warning for every assumption.
fn resolve_groups(
    world: u32,
    present: &BTreeSet<u32>,
    comm: Option<&groups::CommGroups>,
    pg_hints: &BTreeMap<String, BTreeMap<String, u64>>,
    unnamed: u64,
    p2p: &[(u32, u32)],
    diagnostics: &mut Vec<Diagnostic>,
) -> Resolved {
    let none = Resolved {
        layout: None,
        single: BTreeSet::new(),
    };
    let names = |v: &mut dyn Iterator<Item = &String>| {
        let mut all: Vec<&str> = v.map(String::as_str).collect();
        // Integer ids in numeric order, then the others.
        all.sort_by_key(|id| (id.parse::<u64>().map_err(|_| *id), *id));
        let shown: Vec<&str> = all.iter().take(10).copied().collect();
        format!(
            "{}{}",
            shown.join(", "),
            if all.len() > 10 { ", ..." } else { "" }
        )
    };
    let Some(g) = comm else {
        if !pg_hints.is_empty() {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "process group(s) {} are simulated over all ranks of the job (no comm_groups.json is given)",
                    names(&mut pg_hints.keys())
                ))
                .with_hint("give the comm_groups.json written with the .et files (ASTRA-sim's --comm-group-configuration) beside them to simulate each collective over its group's ranks"),
            );
        }
        return none;
    };
    let fallback = "every collective is simulated over all ranks as one data-parallel group";
    if g.has_errors() {
        diagnostics.push(Diagnostic::warning(format!(
            "`{}` has errors and is not used: {fallback}",
            g.file
        )));
        return none;
    }
    let outside = g.out_of_world(world);
    if !outside.is_empty() {
        diagnostics.extend(outside);
        diagnostics.push(Diagnostic::warning(format!(
            "`{}` names ranks outside the Chakra set: {fallback}",
            g.file
        )));
        return none;
    }
    if pg_hints.is_empty() {
        diagnostics.push(Diagnostic::warning(format!(
            "no collective of the Chakra files names a pg_name: `{}` is not used",
            g.file
        )));
        return none;
    }
    let unknown: Vec<&String> = pg_hints.keys().filter(|pg| g.get(pg).is_none()).collect();
    if !unknown.is_empty() {
        diagnostics.push(Diagnostic::warning(format!(
            "pg_name(s) {} of the Chakra files have no group in `{}`: simulated over all ranks (ASTRA-sim's default group)",
            names(&mut unknown.iter().copied()),
            g.file
        )));
    }
    let mut used: Vec<(&str, Vec<u32>, Option<&str>)> = Vec::new();
    let mut single = BTreeSet::new();
    for (pg, hints) in pg_hints {
        let Some(entry) = g.get(pg) else { continue };
        if entry.ranks.len() == 1 {
            single.insert(pg.clone());
            continue;
        }
        let mut members = entry.ranks.clone();
        members.sort_unstable();
        // The most frequent hint (ties: the first name).
        let hint = hints
            .iter()
            .max_by_key(|(h, n)| (**n, std::cmp::Reverse(h.as_str())))
            .map(|(h, _)| h.as_str());
        used.push((pg.as_str(), members, hint));
    }
    if !single.is_empty() {
        diagnostics.push(Diagnostic::warning(format!(
            "group(s) {} of `{}` have one rank: their collectives move nothing and take 0 ns",
            names(&mut single.iter()),
            g.file
        )));
    }
    let view: Vec<(&str, &[u32], Option<&str>)> = used
        .iter()
        .map(|(id, m, h)| (*id, m.as_slice(), *h))
        .collect();
    let layout = match groups::infer_layout(world, &view, p2p) {
        Ok(l) => l,
        Err(why) => {
            diagnostics.push(
                Diagnostic::warning(format!("`{}`: {why}: {fallback}", g.file)).with_hint(
                    "trainscope simulates the groups of a Megatron layout (TP, DP, EP, DP across experts, the first and last stages' embedding group)",
                ),
            );
            return Resolved {
                layout: None,
                single,
            };
        }
    };
    if (unnamed > 0 || !unknown.is_empty()) && layout.world_kind().is_none() {
        diagnostics.push(Diagnostic::warning(format!(
            "collectives over all ranks (without pg_name or with one `{}` lacks) are no group of the layout TP {} x DP {} x PP {} the groups fit: {fallback}",
            g.file, layout.tp, layout.dp, layout.pp
        )));
        return Resolved {
            layout: None,
            single,
        };
    }
    if let Some(stage) = (0..layout.pp).find(|s| !present.iter().any(|r| layout.stage_of(*r) == *s))
    {
        diagnostics.push(Diagnostic::warning(format!(
            "the groups fit TP {} x DP {} x PP {}, but no Chakra file is a rank of stage {stage}: {fallback}",
            layout.tp, layout.dp, layout.pp
        )));
        return Resolved {
            layout: None,
            single,
        };
    }
    Resolved {
        layout: Some(layout),
        single,
    }
}

/// Count a collective's `pg_name` (with the writer's hint) for the layout
/// of the groups, or an unnamed one.
fn count_group(
    pg_name: Option<&str>,
    group_hint: Option<&str>,
    n: u64,
    pg_hints: &mut BTreeMap<String, BTreeMap<String, u64>>,
    unnamed: &mut u64,
) {
    match pg_name {
        Some(pg) => {
            // Looked up before inserting: no key copy per collective.
            let hint = group_hint.unwrap_or_default();
            let hints = match pg_hints.get_mut(pg) {
                Some(h) => h,
                None => pg_hints.entry(pg.to_string()).or_default(),
            };
            match hints.get_mut(hint) {
                Some(c) => *c += n,
                None => {
                    hints.insert(hint.to_string(), n);
                }
            }
        }
        None => *unnamed += n,
    }
}

/// A rank's collectives by (`pg_name`, writer's hint), counted before
/// they go to the set's counts (a rank uses a few groups).
#[derive(Default)]
struct GroupTally<'a>(Vec<(Option<&'a str>, Option<&'a str>, u64)>);

impl<'a> GroupTally<'a> {
    fn add(&mut self, pg_name: Option<&'a str>, group_hint: Option<&'a str>) {
        match self
            .0
            .iter_mut()
            .find(|e| e.0 == pg_name && e.1 == group_hint)
        {
            Some(e) => e.2 += 1,
            None => self.0.push((pg_name, group_hint, 1)),
        }
    }

    fn flush(self, pg_hints: &mut BTreeMap<String, BTreeMap<String, u64>>, unnamed: &mut u64) {
        for (pg, hint, n) in self.0 {
            count_group(pg, hint, n, pg_hints, unnamed);
        }
    }
}

/// The measured op of a kept node (before transfers and groups are
/// resolved).
fn op_of_node(n: &ChakraNode) -> MeasuredOp {
    let kind = match n.work {
        NodeWork::Compute => OpKind::Compute,
        NodeWork::Collective(c) => OpKind::Collective {
            collective: c,
            group: CommGroup::Dp,
        },
        NodeWork::Send { .. } => OpKind::Send,
        NodeWork::Recv { .. } => OpKind::Recv,
    };
    let mut op = MeasuredOp::new(n.name.clone(), kind);
    op.duration_ns = Some(n.duration_ns);
    op.start_ns = n.start_ns;
    if let NodeWork::Send { peer, tag } | NodeWork::Recv { peer, tag } = n.work {
        op.duration_ns = None;
        op.message_bytes = Some(n.size_bytes);
        op.peer = Some(peer);
        op.detail = Some(format!("tag {tag}"));
    }
    if matches!(n.work, NodeWork::Collective(_)) {
        op.duration_ns = None;
        op.message_bytes = Some(n.size_bytes);
        if let Some(pg) = &n.pg_name {
            op.detail = Some(format!("pg_name {pg}"));
        }
    }
    op
}

/// A collective's (kind, duration, detail) once its group is resolved.
type PgOutcome = (OpKind, Option<u64>, Option<std::sync::Arc<str>>);

/// The ops of the ranks that run another rank's program, while the run is
/// made: rank -> (op index -> the values it holds for itself).
type Overlays = BTreeMap<u32, Vec<(u32, OpValues)>>;

/// Change the values of op `i` of `rank` (its own op, or its overlay
/// entry when it runs another rank's program).
fn change_op(
    ranks: &mut BTreeMap<u32, RankTrace>,
    overlays: &mut Overlays,
    rank: u32,
    i: usize,
    f: impl FnOnce(&mut OpValues),
) {
    if let Some(o) = overlays.get_mut(&rank) {
        if let Ok(k) = o.binary_search_by_key(&(i as u32), |v| v.0) {
            f(&mut o[k].1);
        }
        return;
    }
    if let Some(op) = ranks.get_mut(&rank).and_then(|rt| rt.ops.get_mut(i)) {
        let mut v = OpValues::of(op);
        f(&mut v);
        v.apply(op);
    }
}

/// A collective's group kind from its `pg_name` (the layout's), or a
/// `pg_name` of one rank: a 0-ns no-op.
fn resolve_collective(
    kind: &mut OpKind,
    duration_ns: &mut Option<u64>,
    detail: &mut Option<String>,
    layout: Option<&groups::Layout>,
    single: &BTreeSet<String>,
) {
    let pg = detail.as_deref().and_then(|d| d.strip_prefix("pg_name "));
    match layout {
        Some(l) => {
            let OpKind::Collective { group, .. } = kind else {
                return;
            };
            let world_kind = l.world_kind().unwrap_or(CommGroup::Dp);
            let k = match pg {
                Some(pg) if single.contains(pg) => None,
                Some(pg) => Some(l.kinds.get(pg).copied().unwrap_or(world_kind)),
                None => Some(world_kind),
            };
            match k {
                Some(k) => {
                    *group = k;
                    if let Some(pg) = pg {
                        *detail = Some(format!("pg_name {pg} ({})", group_name(k)));
                    }
                }
                None => {
                    *kind = OpKind::Compute;
                    *duration_ns = Some(0);
                }
            }
        }
        None => {
            if pg.is_some_and(|pg| single.contains(pg)) {
                *kind = OpKind::Compute;
                *duration_ns = Some(0);
            }
        }
    }
}

/// One measured run of a set of traces and, when given, their
/// communicator-group file (see the module documentation). A file read as
/// a copy of another file of the set ([`ChakraTrace::copy`]) gives a rank
/// that runs that file's rank's program ([`RankTrace::copy`]: its own
/// groups, peers and transfers only), unless its sends and receives match
/// otherwise than that rank's (then it holds its ops).
pub fn to_run(traces: &[ChakraTrace], comm: Option<&groups::CommGroups>) -> MeasuredRun {
    let nodes: u64 = traces.iter().map(|t| t.node_count() as u64).sum();
    to_run_sharing(traces, comm, nodes >= SHARE_PROGRAMS_MIN_NODES)
}

/// Sets of at least this many nodes give ranks that run another rank's
/// program as such ([`RankTrace::copy`]); smaller sets hold every rank's
/// ops (what they cost is small, and every rank's `ops` can be read and
/// changed directly).
pub const SHARE_PROGRAMS_MIN_NODES: u64 = 1 << 16;

/// [`to_run`], with `share`: whether ranks read as copies of another
/// file's program ([`ChakraTrace::copy`]) share that rank's ops
/// ([`RankTrace::copy`]); without it every rank holds its ops. Either run
/// reads the same through [`MeasuredRun::ops_of`].
pub fn to_run_sharing(
    traces: &[ChakraTrace],
    comm: Option<&groups::CommGroups>,
    share: bool,
) -> MeasuredRun {
    let mut diagnostics: Vec<Diagnostic> = traces
        .iter()
        .flat_map(|t| t.diagnostics.iter().cloned())
        .collect();
    let named = traces.iter().all(|t| t.rank.is_some());
    if !named && traces.len() > 1 {
        diagnostics.push(Diagnostic::warning(
            "not every Chakra file is named `NAME.<rank>.et`: ranks are taken in input order",
        ));
    }
    let rank_of = |i: usize, t: &ChakraTrace| {
        if named {
            t.rank.unwrap_or(0)
        } else {
            u32::try_from(i).unwrap_or(u32::MAX)
        }
    };
    // The rank of each kept file parsed in full, by file name: what a copy
    // of it runs.
    // The first file of each rank is kept (input order).
    let mut kept: BTreeSet<u32> = BTreeSet::new();
    let mut keep: Vec<bool> = Vec::with_capacity(traces.len());
    let mut full_rank: BTreeMap<&str, (u32, usize)> = BTreeMap::new();
    for (i, t) in traces.iter().enumerate() {
        let rank = rank_of(i, t);
        keep.push(kept.insert(rank));
        if keep[i] && t.copy.is_none() {
            full_rank.entry(t.file.as_str()).or_insert((rank, i));
        }
    }
    // A copy's template -> the rank whose ops are its (the kept file of
    // that name reads as the template does).
    let mut program_rank: BTreeMap<*const ChakraTrace, Option<u32>> = BTreeMap::new();
    let mut comm_of: BTreeMap<*const ChakraTrace, CommNodes> = BTreeMap::new();
    let mut ranks: BTreeMap<u32, RankTrace> = BTreeMap::new();
    let mut overlays: Overlays = BTreeMap::new();
    // pg_name -> writer's hint -> collectives.
    let mut pg_hints: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut unnamed = 0u64;
    // Point-to-point partners (rank, peer): pipeline neighbours.
    let mut p2p: Vec<(u32, u32)> = Vec::new();
    // Rank -> index of its trace.
    let mut trace_of: BTreeMap<u32, usize> = BTreeMap::new();
    // Full files first: a copy's values are made from its program's ops.
    let order = (0..traces.len())
        .filter(|i| traces[*i].copy.is_none())
        .chain((0..traces.len()).filter(|i| traces[*i].copy.is_some()));
    let mut second: Vec<usize> = Vec::new();
    for i in order {
        let t = &traces[i];
        let rank = rank_of(i, t);
        if !keep[i] {
            second.push(i);
            continue;
        }
        let program = t.copy.as_ref().filter(|_| share).and_then(|c| {
            let key = std::sync::Arc::as_ptr(&c.template);
            *program_rank.entry(key).or_insert_with(|| {
                let &(r, k) = full_rank.get(c.template.file.as_str())?;
                (traces[k].nodes == c.template.nodes && ranks.contains_key(&r)).then_some(r)
            })
        });
        let (ops, copy) = match (program, &t.copy) {
            (Some(of), Some(c)) => {
                let program_ops = &ranks[&of].ops;
                // The template's collectives, sends and receives (found
                // once per template; its compute nodes hold nothing of a
                // copy's own).
                let comm = comm_of
                    .entry(std::sync::Arc::as_ptr(&c.template))
                    .or_insert_with(|| comm_nodes(&c.template.nodes, program_ops));
                let mut values: Vec<(u32, OpValues)> = Vec::with_capacity(comm.p2p_values.len());
                let mut tally = GroupTally::default();
                let (mut kg, mut kp, mut kv) = (0, 0, 0);
                for &j in &comm.nodes {
                    let j = j as usize;
                    let n = &c.template.nodes[j];
                    match n.work {
                        NodeWork::Collective(_) => {
                            while kg < c.pg_names.len() && (c.pg_names[kg].0 as usize) < j {
                                kg += 1;
                            }
                            let pg = match c.pg_names.get(kg) {
                                Some((g, pg)) if *g as usize == j => pg.as_deref(),
                                _ => n.pg_name.as_deref(),
                            };
                            tally.add(pg, n.group_hint.as_deref());
                        }
                        // Every send and receive holds its own values:
                        // they are matched rank by rank.
                        NodeWork::Send { peer, .. } | NodeWork::Recv { peer, .. } => {
                            while kp < c.peers.len() && (c.peers[kp].0 as usize) < j {
                                kp += 1;
                            }
                            let peer = match c.peers.get(kp) {
                                Some((g, p)) if *g as usize == j => *p,
                                _ => peer,
                            };
                            // The program's values (its detail shared),
                            // with this rank's peer.
                            let mut v = comm.p2p_values[kv].clone();
                            kv += 1;
                            v.peer = Some(peer);
                            values.push((j as u32, v));
                        }
                        NodeWork::Compute => {}
                    }
                }
                tally.flush(&mut pg_hints, &mut unnamed);
                values.sort_by_key(|v| v.0);
                overlays.insert(rank, values);
                (
                    Vec::new(),
                    Some(RankCopy {
                        of,
                        values: Vec::new(),
                        shared_at: Vec::new(),
                        shared: std::sync::Arc::default(),
                    }),
                )
            }
            _ => {
                let nodes = t.all_nodes();
                let mut tally = GroupTally::default();
                for n in nodes.iter() {
                    if matches!(n.work, NodeWork::Collective(_)) {
                        tally.add(n.pg_name.as_deref(), n.group_hint.as_deref());
                    }
                }
                tally.flush(&mut pg_hints, &mut unnamed);
                (nodes.iter().map(op_of_node).collect(), None)
            }
        };
        p2p.extend(t.p2p_peers.iter().map(|p| (rank, *p)));
        trace_of.insert(rank, i);
        ranks.insert(
            rank,
            RankTrace {
                rank,
                stage: Some(0),
                file: t.file.clone(),
                ops,
                iterations: Vec::new(),
                copy,
            },
        );
    }
    // A second file for a rank, in input order.
    second.sort_unstable();
    for i in second {
        diagnostics.push(Diagnostic::error(format!(
            "`{}` is a second file for rank {}: ignored",
            traces[i].file,
            rank_of(i, &traces[i])
        )));
    }
    let world = ranks
        .keys()
        .next_back()
        .map_or(1, |r| r.saturating_add(1))
        .max(1);
    let missing: Vec<u32> = (0..world).filter(|r| !ranks.contains_key(r)).collect();
    if !missing.is_empty() {
        diagnostics.push(Diagnostic::warning(format!(
            "Chakra files for rank(s) {missing:?} of {world} are missing: the set is simulated as the ranks it holds"
        )));
    }
    let present: BTreeSet<u32> = ranks.keys().copied().collect();
    match_transfers(
        traces,
        &trace_of,
        &mut ranks,
        &mut overlays,
        &mut diagnostics,
    );
    let resolved = resolve_groups(
        world,
        &present,
        comm,
        &pg_hints,
        unnamed,
        &p2p,
        &mut diagnostics,
    );
    let layout = resolved.layout.as_ref();
    for rt in ranks.values_mut() {
        if let Some(l) = layout {
            rt.stage = Some(l.stage_of(rt.rank));
        }
        for op in &mut rt.ops {
            if matches!(op.kind, OpKind::Collective { .. }) {
                resolve_collective(
                    &mut op.kind,
                    &mut op.duration_ns,
                    &mut op.detail,
                    layout,
                    &resolved.single,
                );
            }
        }
    }
    // A copy's collectives of its own groups: resolved once per
    // `pg_name` (kind: the collective's own, with the resolved group),
    // their values kept once per (`pg_name`, collective) for all copies.
    let mut by_pg: BTreeMap<Option<&str>, PgOutcome> = BTreeMap::new();
    let mut shared_index: BTreeMap<(Option<&str>, CommKind), u32> = BTreeMap::new();
    let mut shared: Vec<OpValues> = Vec::new();
    for (rank, mut values) in overlays {
        let Some(c) = trace_of.get(&rank).and_then(|&ti| traces[ti].copy.as_ref()) else {
            continue;
        };
        let mut shared_at = Vec::with_capacity(c.pg_names.len());
        // The last entry's (`pg_name`, collective) and index: a file's
        // collectives of one group share one `pg_name` value.
        let mut last: Option<(&std::sync::Arc<str>, CommKind, u32)> = None;
        for (j, pg) in &c.pg_names {
            let NodeWork::Collective(collective) = c.template.nodes[*j as usize].work else {
                continue;
            };
            let key = (pg.as_deref(), collective);
            let hit = match (last, pg) {
                (Some((l, lc, k)), Some(pg))
                    if lc == collective && std::sync::Arc::ptr_eq(l, pg) =>
                {
                    Some(k)
                }
                _ => shared_index.get(&key).copied(),
            };
            let k = match hit {
                Some(k) => k,
                None => {
                    let (kind, duration_ns, detail) =
                        by_pg.entry(pg.as_deref()).or_insert_with(|| {
                            let mut kind = OpKind::Collective {
                                collective,
                                group: CommGroup::Dp,
                            };
                            let mut duration_ns = None;
                            let mut detail = pg.as_ref().map(|pg| format!("pg_name {pg}"));
                            resolve_collective(
                                &mut kind,
                                &mut duration_ns,
                                &mut detail,
                                layout,
                                &resolved.single,
                            );
                            (kind, duration_ns, detail.map(std::sync::Arc::from))
                        });
                    let kind = match *kind {
                        OpKind::Collective { group, .. } => {
                            OpKind::Collective { collective, group }
                        }
                        other => other,
                    };
                    shared.push(OpValues {
                        kind,
                        duration_ns: *duration_ns,
                        detail: detail.clone(),
                        peer: None,
                        transfer: None,
                    });
                    let k = u32::try_from(shared.len() - 1).unwrap_or(u32::MAX);
                    shared_index.insert(key, k);
                    k
                }
            };
            last = pg.as_ref().map(|pg| (pg, collective, k));
            shared_at.push((*j, k));
        }
        values.sort_by_key(|v| v.0);
        if let Some(copy) = ranks.get_mut(&rank).and_then(|rt| rt.copy.as_mut()) {
            copy.values = values;
            copy.shared_at = shared_at;
        }
    }
    let shared: std::sync::Arc<[OpValues]> = shared.into();
    for copy in ranks.values_mut().filter_map(|rt| rt.copy.as_mut()) {
        copy.shared = std::sync::Arc::clone(&shared);
    }
    let parallel = match layout {
        Some(l) => ParallelConfig::resolve(Some(world), l.tp, l.pp, l.ep, 1).0,
        None => ParallelConfig::resolve(Some(world), 1, 1, 1, 1).0,
    };
    let mut files: Vec<String> = traces.iter().map(|t| t.file.clone()).collect();
    if let Some(g) = comm {
        files.push(g.file.clone());
    }
    MeasuredRun {
        format: Format::ChakraEt,
        files,
        parallel,
        ranks: ranks.into_values().collect(),
        iterations: Vec::new(),
        diagnostics,
    }
}

/// A trace's nodes that are not compute: their indices, ascending, and
/// the values of its sends and receives in its program's ops
/// (`program_ops`), in node order: what a copy's sends and receives start
/// from.
struct CommNodes {
    nodes: Vec<u32>,
    p2p_values: Vec<OpValues>,
}

fn comm_nodes(nodes: &[ChakraNode], program_ops: &[MeasuredOp]) -> CommNodes {
    let picked: Vec<u32> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.work != NodeWork::Compute)
        .map(|(j, _)| j as u32)
        .collect();
    let p2p_values = picked
        .iter()
        .filter(|&&j| {
            matches!(
                nodes[j as usize].work,
                NodeWork::Send { .. } | NodeWork::Recv { .. }
            )
        })
        .map(|&j| OpValues::of(&program_ops[j as usize]))
        .collect();
    CommNodes {
        nodes: picked,
        p2p_values,
    }
}

/// One send or receive of a set: (rank, index of its node / op, node).
type P2pEnd<'a> = (u32, usize, &'a P2pNode);

/// What matching reads of a send or receive node.
struct P2pNode {
    id: u64,
    offset: u64,
    work: NodeWork,
    size_bytes: u64,
}

/// Most unmatched point-to-point nodes named one by one (the rest are
/// counted in one more warning).
const UNMATCHED_NAMED: usize = 20;

/// Match the sends and receives of a set into transfers (see the module
/// documentation): per ordered pair of ranks and tag, the k-th send (file
/// order) with the k-th receive. A matched op gets its
/// [`MeasuredOp::transfer`]; an unmatched one (its peer has no file or is
/// itself, no partner, a partner of another size) becomes a 0-ns compute
/// no-op with a warning naming its node and rank. Then every op's
/// [`MeasuredOp::waits_for`]: the matched sends and receives it depends on
/// directly.
fn match_transfers(
    traces: &[ChakraTrace],
    trace_of: &BTreeMap<u32, usize>,
    ranks: &mut BTreeMap<u32, RankTrace>,
    overlays: &mut Overlays,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // (from, to, tag) -> sends / receives in file order.
    type Key = (u32, u32, i64);
    // Every rank's sends and receives (a copy's with its own peers and
    // offsets), in file order.
    let mut all_ends: Vec<(u32, Vec<(usize, P2pNode)>)> = Vec::new();
    // A template's sends and receives (found once per template).
    let mut p2p_of: BTreeMap<*const ChakraNode, Vec<usize>> = BTreeMap::new();
    for (&rank, &ti) in trace_of {
        let t = &traces[ti];
        let nodes: &[ChakraNode] = t.copy.as_ref().map_or(&t.nodes, |c| &c.template.nodes);
        let offsets: Option<&[u64]> = t.copy.as_ref().map(|c| &c.offsets[..]);
        let peers: &[(u32, u32)] = t.copy.as_ref().map_or(&[], |c| &c.peers);
        let p2p = p2p_of.entry(nodes.as_ptr()).or_insert_with(|| {
            nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| matches!(n.work, NodeWork::Send { .. } | NodeWork::Recv { .. }))
                .map(|(i, _)| i)
                .collect()
        });
        let mut ends: Vec<(usize, P2pNode)> = p2p
            .iter()
            .map(|&i| (i, &nodes[i]))
            .map(|(i, n)| {
                let mut work = n.work;
                if let Ok(k) = peers.binary_search_by_key(&(i as u32), |p| p.0) {
                    if let NodeWork::Send { peer, .. } | NodeWork::Recv { peer, .. } = &mut work {
                        *peer = peers[k].1;
                    }
                }
                let node = P2pNode {
                    id: n.id,
                    offset: offsets.map_or(n.offset, |o| o[i]),
                    work,
                    size_bytes: n.size_bytes,
                };
                (i, node)
            })
            .collect();
        ends.sort_by_key(|(_, n)| n.offset);
        all_ends.push((rank, ends));
    }
    let mut sends: BTreeMap<Key, Vec<P2pEnd<'_>>> = BTreeMap::new();
    let mut recvs: BTreeMap<Key, Vec<P2pEnd<'_>>> = BTreeMap::new();
    let mut unmatched: Vec<(P2pEnd<'_>, String)> = Vec::new();
    for (rank, ends) in &all_ends {
        let rank = *rank;
        for (i, n) in ends {
            let i = *i;
            let (key, peer, map) = match n.work {
                NodeWork::Send { peer, tag } => ((rank, peer, tag), peer, &mut sends),
                NodeWork::Recv { peer, tag } => ((peer, rank, tag), peer, &mut recvs),
                _ => continue,
            };
            if peer == rank {
                unmatched.push(((rank, i, n), "its peer is its own rank".to_string()));
            } else if !trace_of.contains_key(&peer) {
                unmatched.push(((rank, i, n), format!("rank {peer} has no file in the set")));
            } else {
                map.entry(key).or_default().push((rank, i, n));
            }
        }
    }
    let mut matched: Vec<(P2pEnd<'_>, P2pEnd<'_>)> = Vec::new();
    let keys: BTreeSet<Key> = sends.keys().chain(recvs.keys()).copied().collect();
    for key in keys {
        let ss = sends.remove(&key).unwrap_or_default();
        let rs = recvs.remove(&key).unwrap_or_default();
        let (from, to, tag) = key;
        for k in 0..ss.len().max(rs.len()) {
            match (ss.get(k), rs.get(k)) {
                (Some(s), Some(r)) if s.2.size_bytes == r.2.size_bytes => matched.push((*s, *r)),
                (Some(s), Some(r)) => {
                    unmatched.push((
                        *s,
                        format!(
                            "its receive (node {} of rank {to}, tag {tag}) has comm_size {} bytes, the send {}",
                            r.2.id, r.2.size_bytes, s.2.size_bytes
                        ),
                    ));
                    unmatched.push((
                        *r,
                        format!(
                            "its send (node {} of rank {from}, tag {tag}) has comm_size {} bytes, the receive {}",
                            s.2.id, s.2.size_bytes, r.2.size_bytes
                        ),
                    ));
                }
                (Some(s), None) => unmatched.push((
                    *s,
                    format!("rank {to} has no receive from rank {from} with tag {tag} for it"),
                )),
                (None, Some(r)) => unmatched.push((
                    *r,
                    format!("rank {from} has no send to rank {to} with tag {tag} for it"),
                )),
                (None, None) => {}
            }
        }
    }
    for (t, (s, r)) in matched.iter().enumerate() {
        for (rank, i, _) in [s, r] {
            change_op(ranks, overlays, *rank, *i, |v| v.transfer = Some(t as u32));
        }
    }
    unmatched.sort_by_key(|((rank, _, n), _)| (*rank, n.offset));
    for (k, ((rank, i, n), why)) in unmatched.iter().enumerate() {
        let what = if matches!(n.work, NodeWork::Send { .. }) {
            "send"
        } else {
            "receive"
        };
        let file = &traces[trace_of[rank]].file;
        if k < UNMATCHED_NAMED {
            diagnostics.push(
                Diagnostic::warning(format!(
                    "`{file}`: {what} node {} of rank {rank} is not matched ({why}): replayed as a 0-ns no-op",
                    n.id
                ))
                .at(at(file, n.offset as usize, &format!("node {}", n.id))),
            );
        }
        change_op(ranks, overlays, *rank, *i, |v| {
            v.kind = OpKind::Compute;
            v.duration_ns = Some(0);
            v.detail = Some(format!("unmatched {what}: 0-ns no-op").into());
        });
    }
    if unmatched.len() > UNMATCHED_NAMED {
        diagnostics.push(Diagnostic::warning(format!(
            "{} more send / receive nodes are not matched: replayed as 0-ns no-ops",
            unmatched.len() - UNMATCHED_NAMED
        )));
    }
    // A rank running another rank's program whose sends and receives are
    // matched otherwise than that rank's holds its own ops (what they wait
    // for differs).
    let matched_of = |ranks: &BTreeMap<u32, RankTrace>, rank: u32| -> Vec<u32> {
        ranks.get(&rank).map_or_else(Vec::new, |rt| {
            rt.ops
                .iter()
                .enumerate()
                .filter(|(_, o)| o.transfer.is_some())
                .map(|(i, _)| i as u32)
                .collect()
        })
    };
    let copies: Vec<u32> = overlays.keys().copied().collect();
    let mut program_matched: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for rank in copies {
        let Some(of) = ranks
            .get(&rank)
            .and_then(|rt| rt.copy.as_ref())
            .map(|c| c.of)
        else {
            continue;
        };
        let own: Vec<u32> = overlays[&rank]
            .iter()
            .filter(|(_, v)| v.transfer.is_some())
            .map(|(i, _)| *i)
            .collect();
        let theirs = program_matched
            .entry(of)
            .or_insert_with(|| matched_of(ranks, of));
        if own == *theirs {
            continue;
        }
        let values = overlays.remove(&rank).unwrap_or_default();
        let mut ops = ranks[&of].ops.clone();
        for (i, v) in values {
            if let Some(op) = ops.get_mut(i as usize) {
                v.apply(op);
            }
        }
        // Its own groups (as its collectives read before groups resolve).
        let pg_names = trace_of
            .get(&rank)
            .and_then(|&ti| traces[ti].copy.as_ref())
            .map_or(&[][..], |c| &c.pg_names[..]);
        for (j, pg) in pg_names {
            if let Some(op) = ops.get_mut(*j as usize) {
                if matches!(op.kind, OpKind::Collective { .. }) {
                    op.detail = pg.as_ref().map(|pg| format!("pg_name {pg}"));
                }
            }
        }
        if let Some(rt) = ranks.get_mut(&rank) {
            rt.ops = ops;
            rt.copy = None;
        }
    }
    // What each op waits for (a copy waits as its program does).
    for (&rank, &ti) in trace_of {
        let t = &traces[ti];
        let nodes: &[ChakraNode] = match &t.copy {
            Some(c) => &c.template.nodes,
            None => &t.nodes,
        };
        let Some(rt) = ranks.get_mut(&rank) else {
            continue;
        };
        if rt.copy.is_some() {
            continue;
        }
        // The matched ops' node ids (a rank's few sends and receives),
        // sorted: what a dependency is looked up in.
        let mut matched: Vec<(u64, u32)> = rt
            .ops
            .iter()
            .zip(nodes)
            .enumerate()
            .filter(|(_, (o, _))| o.transfer.is_some())
            .map(|(i, (_, n))| (n.id, i as u32))
            .collect();
        matched.sort_unstable();
        if matched.is_empty() {
            continue;
        }
        for (op, node) in rt.ops.iter_mut().zip(nodes) {
            let mut waits: Vec<u32> = node
                .deps
                .iter()
                .filter_map(|d| {
                    matched
                        .binary_search_by_key(d, |m| m.0)
                        .ok()
                        .map(|k| matched[k].1)
                })
                .collect();
            waits.sort_unstable();
            waits.dedup();
            op.waits_for = waits;
        }
    }
}

/// The group kind's name in op details.
fn group_name(g: CommGroup) -> &'static str {
    match g {
        CommGroup::Tp => "TP",
        CommGroup::Dp => "DP",
        CommGroup::Ep => "EP",
        CommGroup::DpEp => "DP_EP",
        CommGroup::Cp => "CP",
        CommGroup::DpShard => "DP shard (HSDP)",
        CommGroup::DpReplicate => "DP replicate (HSDP)",
        CommGroup::Pp => "PP",
        CommGroup::Embedding => "first and last stage",
        CommGroup::PositionEmbedding => "position embedding",
        CommGroup::Unscoped => "all ranks",
    }
}
