//! The per-collective cost of SimAI-Analytical (docs/FORMATS.md §4, items
//! 1-7), as small pure functions: the group's placement on servers
//! ([`SimaiPlacement::for_group`]), the bus bandwidth of a placement ([`busbw`]),
//! the small-message constants ([`small_message_ns`]), the choice of ratio
//! table ([`ratio_source`]) and the time itself ([`CostModel::cost`],
//! [`collective_time_ns`]).
//!
//! Units: sizes in bytes, bandwidths in GB/s with 1 GB = 2^30 bytes, times in
//! integer nanoseconds truncated toward zero exactly where SimAI truncates.

use super::config::ClusterConfig;
use super::error::AnalyticalError;
pub use super::groups::{group_size, Phase, SimaiGroup, SimaiPlacement};
use super::tables::{column_for_nodes, has_column, RatioTables, TableKind};
use crate::formats::simai::Collective;
use serde::Serialize;

/// 2^30: bytes per GB in every bandwidth of this model.
pub const BYTES_PER_GB: f64 = 1_073_741_824.0;

/// Forward messages in (0, 4096) bytes are raised to this size first.
pub const MIN_FORWARD_BYTES: u64 = 4096;

/// Messages strictly between 1 and this many bytes cost a constant.
pub const SMALL_MESSAGE_LIMIT_BYTES: u64 = 1_048_576;

/// Display name of a collective in messages.
pub fn collective_name(c: Collective) -> &'static str {
    match c {
        Collective::AllReduce => "all-reduce",
        Collective::AllGather => "all-gather",
        Collective::ReduceScatter => "reduce-scatter",
        Collective::AllToAll => "all-to-all",
    }
}

/// Bus-bandwidth factor f of a collective over n ranks (dimensionless):
/// 2(n-1)/n for all-reduce, (n-1)/n for the others, 0 for n = 0.
pub fn bus_factor(collective: Collective, n: u32) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let n1 = f64::from(n - 1);
    match collective {
        Collective::AllReduce => 2.0 * n1 / f64::from(n),
        _ => n1 / f64::from(n),
    }
}

impl SimaiPlacement {
    /// Refuse a placement with no node, no GPU or no NIC per node, naming
    /// the group and where the zero came from.
    pub fn validate(
        &self,
        group: SimaiGroup,
        group_size: u32,
        tp: u32,
        ep: u32,
        cluster: &ClusterConfig,
    ) -> Result<(), AnalyticalError> {
        let (p, k) = (cluster.gpus_per_server, cluster.nics_per_server);
        let divisor = match group {
            SimaiGroup::Tp => format!("TP {tp}"),
            SimaiGroup::Ep if u64::from(tp) > u64::from(p) => format!("GPUs per server {p}"),
            SimaiGroup::Ep => format!("TP {tp}"),
            SimaiGroup::Dp if tp <= p => format!("TP {tp}"),
            SimaiGroup::DpEp if u64::from(tp) * u64::from(ep) <= u64::from(p) => {
                format!("TP {tp} x EP {ep} = {}", u64::from(tp) * u64::from(ep))
            }
            SimaiGroup::Dp | SimaiGroup::DpEp => format!("GPUs per server {p}"),
        };
        let detail = if self.nics_per_node < 1 {
            format!("the group's share of NICs, NICs per server {k} / {divisor}, rounds down to 0")
        } else if self.gpus_per_node < 1 {
            format!("the group's share of GPUs, GPUs per server {p} / {divisor}, rounds down to 0")
        } else if self.nodes < 1 {
            format!("the group spans 0 nodes (TP {tp}, {p} GPUs per server)")
        } else {
            return Ok(());
        };
        Err(AnalyticalError::InvalidPlacement {
            group,
            group_size: u64::from(group_size),
            placement: *self,
            detail,
        })
    }
}

/// A bus bandwidth and which link bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Busbw {
    /// GB/s (2^30 bytes per GB).
    pub gbps: f64,
    /// True when the NVLink term is the (strict) minimum across nodes; picks
    /// the nvlink ratio table for TP all-gather/reduce-scatter.
    pub is_nvlink: bool,
}

/// Bus bandwidth B(N, g, k) of a placement, GB/s, with V = NVLink busbw and
/// C = per-NIC busbw (both > 0, placement validated):
///
/// - all-to-all: V if N = 1, else C·k/g · (N·g - 1) / ((N - 1)·g);
/// - ring (the others): V if N = 1; C·k if g = 1; else min(V, C·k) when
///   k·C <= V, min(V·g/(g - 1), C·k) when k·C > V.
pub fn busbw(
    placement: SimaiPlacement,
    collective: Collective,
    nvlink_gbps: f64,
    nic_gbps: f64,
) -> Busbw {
    let n = placement.nodes as f64;
    let g = placement.gpus_per_node as f64;
    let k = placement.nics_per_node as f64;
    let (v, c) = (nvlink_gbps, nic_gbps);
    if placement.nodes <= 1 {
        return Busbw {
            gbps: v,
            is_nvlink: false,
        };
    }
    if collective == Collective::AllToAll {
        return Busbw {
            gbps: c * k / g * (n * g - 1.0) / ((n - 1.0) * g),
            is_nvlink: false,
        };
    }
    if placement.gpus_per_node == 1 {
        return Busbw {
            gbps: c * k,
            is_nvlink: false,
        };
    }
    let nic = c * k;
    let nvlink = if k * c > v { v * g / (g - 1.0) } else { v };
    Busbw {
        gbps: nvlink.min(nic),
        is_nvlink: nvlink < nic,
    }
}

/// SimAI's constant time for a message of 1 < S < 1 MiB over n ranks, ns:
/// 2: 10000, 4: 12000, 8: 15000, 16: 66000, 32: 135000, 64: 200000,
/// 128: 320000; `None` for any other n (SimAI then charges 0 ns).
pub fn small_message_ns(n: u32) -> Option<u64> {
    Some(match n {
        2 => 10_000,
        4 => 12_000,
        8 => 15_000,
        16 => 66_000,
        32 => 135_000,
        64 => 200_000,
        128 => 320_000,
        _ => return None,
    })
}

/// The ratio table and its node-count key nn for a collective, or `None`
/// when rho = 1 (every all-reduce, every DP and DP_EP collective):
///
/// - TP all-gather / reduce-scatter: nvlink if `is_nvlink` else nic, nn = 1 if tp < P else tp/P;
/// - EP all-to-all: ata, nn = 1 if tp·n <= P, 9 if tp >= P, else (tp·n)/P;
/// - TP all-to-all: ata, nn = 1 if tp <= P else tp/P.
pub fn ratio_source(
    collective: Collective,
    group: SimaiGroup,
    n: u32,
    tp: u32,
    p: u32,
    is_nvlink: bool,
) -> Option<(TableKind, u64)> {
    let (n, tp, p) = (u64::from(n), u64::from(tp), u64::from(p));
    let per_server = |x: u64| x.checked_div(p).unwrap_or(0);
    match (group, collective) {
        (SimaiGroup::Tp, Collective::AllGather | Collective::ReduceScatter) => Some((
            if is_nvlink {
                TableKind::Nvlink
            } else {
                TableKind::Nic
            },
            if tp < p { 1 } else { per_server(tp) },
        )),
        (SimaiGroup::Ep, Collective::AllToAll) => Some((
            TableKind::Ata,
            if tp * n <= p {
                1
            } else if tp >= p {
                9
            } else {
                per_server(tp * n)
            },
        )),
        (SimaiGroup::Tp, Collective::AllToAll) => {
            Some((TableKind::Ata, if tp <= p { 1 } else { per_server(tp) }))
        }
        _ => None,
    }
}

/// How a collective's time was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "path", rename_all = "snake_case")]
pub enum CostPath {
    /// A group of at most one rank: 0 ns.
    SingleRank,
    /// 1 < S < 1 MiB: SimAI's constant for the group size.
    SmallMessage {
        /// False when its table has no entry for n (0 ns, as in SimAI).
        known: bool,
    },
    /// T = trunc(S / 2^30 / (rho·B) · 1e9 · f).
    Bandwidth {
        /// B, GB/s, before the ratio.
        busbw_gbps: f64,
        /// Whether the NVLink term was the minimum (see [`Busbw`]).
        is_nvlink: bool,
        /// rho (1 when no table applies).
        ratio: f64,
        /// The table and node-count key used, if any.
        table: Option<TableKind>,
        /// The node-count key nn looked up (see [`super::tables::column_for_nodes`]).
        table_nodes: Option<u64>,
    },
}

/// The full result of costing one collective.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CollectiveCost {
    /// Time, ns (truncated).
    pub time_ns: u64,
    /// Size after the forward 4096-byte raise, bytes.
    pub size_bytes: u64,
    /// n.
    pub group_size: u32,
    /// f: 2(n-1)/n for all-reduce, (n-1)/n otherwise.
    pub bus_factor: f64,
    /// The group's placement (None for n <= 1).
    pub placement: Option<SimaiPlacement>,
    /// How the time was obtained.
    pub path: CostPath,
}

/// A validated cluster, tables and the TP/EP sizes that place the groups:
/// everything a collective's cost depends on besides the collective itself.
#[derive(Debug, Clone, PartialEq)]
pub struct CostModel {
    cluster: ClusterConfig,
    tables: RatioTables,
    tp: u32,
    ep: u32,
}

impl CostModel {
    /// Validate the cluster (counts >= 1, bandwidths finite and > 0) and
    /// TP/EP (>= 1).
    pub fn new(
        cluster: ClusterConfig,
        tables: RatioTables,
        tp: u32,
        ep: u32,
    ) -> Result<CostModel, AnalyticalError> {
        cluster.validate()?;
        if tp == 0 {
            return Err(AnalyticalError::ZeroCount { what: "TP" });
        }
        if ep == 0 {
            return Err(AnalyticalError::ZeroCount { what: "EP" });
        }
        Ok(CostModel {
            cluster,
            tables,
            tp,
            ep,
        })
    }

    /// The cluster.
    pub fn cluster(&self) -> &ClusterConfig {
        &self.cluster
    }

    /// The ratio tables.
    pub fn tables(&self) -> &RatioTables {
        &self.tables
    }

    /// TP size used for placements.
    pub fn tp(&self) -> u32 {
        self.tp
    }

    /// EP size used for placements.
    pub fn ep(&self) -> u32 {
        self.ep
    }

    /// Cost one collective of `size_bytes` over a `group` of `group_size`
    /// ranks in `phase` (docs/FORMATS.md §4, items 1-7):
    ///
    /// 1. forward sizes in (0, 4096) become 4096;
    /// 2. n <= 1: 0 ns;
    /// 3. the placement must have >= 1 node, GPU and NIC per node (else
    ///    [`AnalyticalError::InvalidPlacement`]), whatever the size;
    /// 4. 1 < S < 1 MiB: [`small_message_ns`] (0 when it has no entry);
    /// 5. otherwise T = trunc(S / 2^30 / (rho·B) · 1e9 · f) ns, with B from
    ///    [`busbw`], rho from [`ratio_source`] (1 when none; a size above the
    ///    table is [`AnalyticalError::MessageTooLarge`]) and f from [`bus_factor`].
    pub fn cost(
        &self,
        collective: Collective,
        group: SimaiGroup,
        group_size: u32,
        size_bytes: u64,
        phase: Phase,
    ) -> Result<CollectiveCost, AnalyticalError> {
        let size_bytes =
            if phase == Phase::Forward && size_bytes > 0 && size_bytes < MIN_FORWARD_BYTES {
                MIN_FORWARD_BYTES
            } else {
                size_bytes
            };
        let f = bus_factor(collective, group_size);
        let mut out = CollectiveCost {
            time_ns: 0,
            size_bytes,
            group_size,
            bus_factor: f,
            placement: None,
            path: CostPath::SingleRank,
        };
        if group_size <= 1 {
            return Ok(out);
        }
        let c = &self.cluster;
        let placement = SimaiPlacement::for_group(
            group,
            group_size,
            self.tp,
            self.ep,
            c.gpus_per_server,
            c.nics_per_server,
        );
        placement.validate(group, group_size, self.tp, self.ep, c)?;
        out.placement = Some(placement);
        if size_bytes > 1 && size_bytes < SMALL_MESSAGE_LIMIT_BYTES {
            let t = small_message_ns(group_size);
            out.time_ns = t.unwrap_or(0);
            out.path = CostPath::SmallMessage { known: t.is_some() };
            return Ok(out);
        }
        let bw = busbw(placement, collective, c.nvlink_busbw_gbps, c.nic_busbw_gbps);
        let source = ratio_source(
            collective,
            group,
            group_size,
            self.tp,
            c.gpus_per_server,
            bw.is_nvlink,
        );
        let ratio = match source {
            None => 1.0,
            Some((table, nn)) => self
                .tables
                .get(table)
                .ratio(size_bytes, column_for_nodes(nn))
                .map_err(|e| AnalyticalError::MessageTooLarge {
                    collective: collective_name(collective),
                    group,
                    group_size: u64::from(group_size),
                    placement,
                    size_bytes,
                    table,
                    max_bytes: e.max_bytes,
                })?,
        };
        let t = size_bytes as f64 / BYTES_PER_GB / (ratio * bw.gbps) * 1e9 * f;
        out.time_ns = f64_to_ns(t).ok_or_else(|| AnalyticalError::Overflow {
            what: "a collective's time",
            detail: format!(
                "{size_bytes}-byte {} over the {group} group of {group_size} ranks at {} GB/s",
                collective_name(collective),
                ratio * bw.gbps
            ),
        })?;
        out.path = CostPath::Bandwidth {
            busbw_gbps: bw.gbps,
            is_nvlink: bw.is_nvlink,
            ratio,
            table: source.map(|s| s.0),
            table_nodes: source.map(|s| s.1),
        };
        Ok(out)
    }
}

/// Whether SimAI would read a node count with no column of its own (and use
/// the 16-node column): for a [`CostPath::Bandwidth`] with a table.
pub fn uses_fallback_column(path: &CostPath) -> Option<(TableKind, u64)> {
    match path {
        CostPath::Bandwidth {
            table: Some(t),
            table_nodes: Some(nn),
            ..
        } if !has_column(*nn) => Some((*t, *nn)),
        _ => None,
    }
}

/// trunc(x) as u64 ns when x is finite, >= 0 and below 2^64.
pub(crate) fn f64_to_ns(x: f64) -> Option<u64> {
    if (0.0..18_446_744_073_709_551_616.0).contains(&x) {
        Some(x.trunc() as u64)
    } else {
        None
    }
}

/// The time of one collective in SimAI-Analytical's model, ns (see
/// [`CostModel::cost`] for the formula). `group` is the resolved group kind
/// (TP, DP, EP, DP_EP: it decides the placement and the ratio table),
/// `group_size` the ranks n in it, `size_bytes` the full (gathered) tensor
/// size and `phase` the column (only the forward column raises sizes below
/// 4096). Errors for a placement with no NIC/GPU/node or a size above the
/// ratio table in use; never a wrapped or NaN figure.
///
/// ```
/// use trainscope_core::analytical::{collective_time_ns, ClusterConfig, CostModel, SimaiGroup, Phase, RatioTables};
/// use trainscope_core::formats::simai::Collective;
/// let cluster = ClusterConfig { world_size: 512, gpus_per_server: 8, nics_per_server: 8,
///                               nvlink_busbw_gbps: 360.0, nic_busbw_gbps: 48.5 };
/// let model = CostModel::new(cluster, RatioTables::builtin(), 8, 1).unwrap();
/// // A 5.8 GiB DP reduce-scatter over 16 ranks, one NIC per rank: 112.27 ms.
/// let t = collective_time_ns(Collective::ReduceScatter, SimaiGroup::Dp, 16, 6_236_471_296,
///                            Phase::WeightGrad, &model).unwrap();
/// assert_eq!(t, 112_271_259);
/// ```
pub fn collective_time_ns(
    collective: Collective,
    group: SimaiGroup,
    group_size: u32,
    size_bytes: u64,
    phase: Phase,
    model: &CostModel,
) -> Result<u64, AnalyticalError> {
    model
        .cost(collective, group, group_size, size_bytes, phase)
        .map(|c| c.time_ns)
}
