//! The "Search configurations" view's bounds as the user types them
//! ([`SweepInputs`]: one comma-separated list per dimension, empty = the
//! core's default list), their order and labels ([`BOUNDS`]) and their
//! part of the page's link. Plain data, so the page, the worker messages
//! ([`crate::protocol`]) and the worker's sweep ([`crate::sweep`]) share it.

use serde::{Deserialize, Serialize};

/// The bounds of a sweep as typed: comma-separated lists, empty for the
/// core's default list (`world` empty: the job panel's TP x CP x PP x DP).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepInputs {
    pub world: String,
    pub tp: String,
    pub cp: String,
    pub pp: String,
    pub ep: String,
    pub vpp: String,
    pub micro_batch_size: String,
    pub recompute: String,
    pub schedule: String,
    /// ZeRO stages (`--zero LIST`).
    pub zero: String,
    /// HSDP shard-group sizes (`--hsdp-shard LIST`; 0: none).
    pub hsdp_shard: String,
    /// What lives in host memory (`--offload LIST`: none, optimizer,
    /// optimizer+params).
    pub offload: String,
    /// CUDA-graph scopes (`--cuda-graphs LIST`).
    pub cuda_graphs: String,
    /// MoE token dispatchers (`--moe-token-dispatcher LIST`; MoE models).
    pub dispatcher: String,
    /// Megatron's EP overlap off / on (`--moe-a2a-overlap-values LIST`;
    /// MoE models).
    pub moe_a2a_overlap: String,
    /// Rank by the step with one GPU slowed by this factor at its worst
    /// place (`--straggler FACTOR`; empty: off).
    pub straggler: String,
}

/// One bound of the view: URL key, test id suffix, label, placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub key: &'static str,
    pub label: &'static str,
    pub placeholder: &'static str,
}

/// Every bound, in the view's and the link's order.
pub const BOUNDS: [Bound; 16] = [
    Bound {
        key: "world",
        label: "GPUs",
        placeholder: "the job's TP x CP x PP x DP",
    },
    Bound {
        key: "tp",
        label: "TP",
        placeholder: "powers of 2 <= GPUs per node",
    },
    Bound {
        key: "cp",
        label: "CP",
        placeholder: "1",
    },
    Bound {
        key: "pp",
        label: "PP",
        placeholder: "divisors of the layers, 2^k split unevenly",
    },
    Bound {
        key: "ep",
        label: "EP",
        placeholder: "1 (MoE: powers of 2)",
    },
    Bound {
        key: "vpp",
        label: "Virtual stages",
        placeholder: "every v > 1 dividing the layers",
    },
    Bound {
        key: "mbs",
        label: "Micro-batch size",
        placeholder: "1,2,4",
    },
    Bound {
        key: "recompute",
        label: "Recompute",
        placeholder: "none,selective,full",
    },
    Bound {
        key: "schedule",
        label: "Schedule",
        placeholder: "every schedule",
    },
    Bound {
        key: "zero",
        label: "ZeRO stage",
        placeholder: "1 (the distributed optimizer); 0,1,2,3",
    },
    Bound {
        key: "hsdp",
        label: "HSDP shard group",
        placeholder: "0 (none); with ZeRO 3, e.g. 0,2,4",
    },
    Bound {
        key: "offload",
        label: "Offload",
        placeholder: "none; e.g. none,optimizer",
    },
    Bound {
        key: "graphs",
        label: "CUDA graphs",
        placeholder: "the job's; none,layers,full",
    },
    Bound {
        key: "dispatcher",
        label: "MoE dispatcher",
        placeholder: "the job's; alltoall,allgather,flex",
    },
    Bound {
        key: "a2a",
        label: "EP overlap",
        placeholder: "the job's; off,on",
    },
    Bound {
        key: "straggler",
        label: "Straggler (rank with one GPU slowed)",
        placeholder: "off; e.g. 1.2",
    },
];

impl SweepInputs {
    /// The text of bound `key` ([`BOUNDS`]).
    pub fn get(&self, key: &str) -> &str {
        match key {
            "world" => &self.world,
            "tp" => &self.tp,
            "cp" => &self.cp,
            "pp" => &self.pp,
            "ep" => &self.ep,
            "vpp" => &self.vpp,
            "mbs" => &self.micro_batch_size,
            "recompute" => &self.recompute,
            "schedule" => &self.schedule,
            "zero" => &self.zero,
            "hsdp" => &self.hsdp_shard,
            "offload" => &self.offload,
            "graphs" => &self.cuda_graphs,
            "dispatcher" => &self.dispatcher,
            "a2a" => &self.moe_a2a_overlap,
            "straggler" => &self.straggler,
            _ => "",
        }
    }

    /// Set bound `key` (an unknown key changes nothing).
    pub fn set(&mut self, key: &str, text: String) {
        let slot = match key {
            "world" => &mut self.world,
            "tp" => &mut self.tp,
            "cp" => &mut self.cp,
            "pp" => &mut self.pp,
            "ep" => &mut self.ep,
            "vpp" => &mut self.vpp,
            "mbs" => &mut self.micro_batch_size,
            "recompute" => &mut self.recompute,
            "schedule" => &mut self.schedule,
            "zero" => &mut self.zero,
            "hsdp" => &mut self.hsdp_shard,
            "offload" => &mut self.offload,
            "graphs" => &mut self.cuda_graphs,
            "dispatcher" => &mut self.dispatcher,
            "a2a" => &mut self.moe_a2a_overlap,
            "straggler" => &mut self.straggler,
            _ => return,
        };
        *slot = text;
    }

    /// The link's part: `sweep_KEY=LIST` for each bound given (`,` kept).
    pub fn fragment(&self) -> String {
        BOUNDS
            .iter()
            .filter(|b| !self.get(b.key).trim().is_empty())
            .map(|b| {
                format!(
                    "sweep_{}={}",
                    b.key,
                    self.get(b.key).trim().replace(' ', "")
                )
            })
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The bounds a link carries (`sweep_KEY=LIST` pairs of a fragment);
    /// `None` when it carries none.
    pub fn from_fragment(fragment: &str) -> Option<SweepInputs> {
        let mut inputs = SweepInputs::default();
        let mut any = false;
        for (k, v) in fragment
            .trim_start_matches('#')
            .split('&')
            .filter_map(|kv| kv.split_once('='))
        {
            if let Some(key) = k.strip_prefix("sweep_") {
                if BOUNDS.iter().any(|b| b.key == key) {
                    inputs.set(key, v.to_string());
                    any = true;
                }
            }
        }
        any.then_some(inputs)
    }
}
