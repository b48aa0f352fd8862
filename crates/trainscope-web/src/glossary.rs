//! What every number of the Read panel means, in one list: a one-line
//! definition per figure key and simulation mode ([`DEFINITIONS`], looked up
//! with [`definition`]), shown as each figure's tooltip and in the
//! "What these numbers mean" disclosure under the figures, and what
//! "measured" covers for each measured input format ([`MEASURED`], looked up
//! with [`measured_covers`]), shown over the measured-vs-simulated table.
//! Pure data, no DOM: the page renders it, the browser tests read it.

use crate::views::ResultKind;

/// One figure's definition in each mode (`None`: the mode has no such
/// figure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Definition {
    /// The figure's key (`Figure::key`; `iteration_time` for the headline,
    /// `critical_path` for the timeline's highlight).
    pub key: &'static str,
    /// Its label where the key alone is not one.
    pub label: &'static str,
    /// In the event-level simulation.
    pub event: Option<&'static str>,
    /// In the SimAI-compatible mode.
    pub simai: Option<&'static str>,
}

/// Every figure the Read panel shows, in display order.
pub const DEFINITIONS: [Definition; 21] = [
    Definition {
        key: "iteration_time",
        label: "Iteration time",
        event: Some("Simulated time of one training iteration: from the first task's start to the last task's end on any rank."),
        simai: Some("SimAI-Analytical's total: compute + exposed communication of every group + bubble + exposed PP."),
    },
    Definition {
        key: "compute",
        label: "Compute",
        event: Some("Time the reference rank's compute stream is busy (forward, input- and weight-gradient kernels, optimizer); the reference rank is the one on which the critical path ends."),
        simai: Some("Sum of every row's forward, input-gradient and weight-gradient compute, one stage's pass as the workload writes it."),
    },
    Definition {
        key: "bubble",
        label: "Bubble",
        event: Some("Time the reference rank's compute waits for other pipeline stages (the schedule's fill and drain, and after its last task until the iteration ends)."),
        simai: Some("SimAI's closed-form pipeline bubble: (PP - 1) / (GA x vpp) x one stage's pass (forward and input-gradient communication plus all compute, the embedding row left out)."),
    },
    Definition {
        key: "comm",
        label: "Exposed comm (total)",
        event: Some("Sum of the exposed communication of every group below: communication the reference rank's compute waits for, not hidden behind its own compute."),
        simai: Some("Sum of the exposed communication of every group below."),
    },
    Definition {
        key: "comm.TP",
        label: "Exposed TP comm",
        event: Some("Time the reference rank's compute waits for tensor-parallel collectives."),
        simai: Some("Forward and input-gradient collectives over TP groups, each x (1 - TP overlap ratio), truncated to whole ns as SimAI does."),
    },
    Definition {
        key: "comm.EP",
        label: "Exposed EP comm",
        event: Some("Time the reference rank's compute waits for expert-parallel collectives (all-to-alls)."),
        simai: Some("Forward and input-gradient collectives of the rows whose forward collective runs over EP, each x (1 - EP overlap ratio)."),
    },
    Definition {
        key: "comm.DP",
        label: "Exposed DP comm",
        event: Some("Time the reference rank's compute waits for data-parallel gradient synchronisation (and the update after it)."),
        simai: Some("Weight-gradient collectives over DP groups, each x (1 - DP overlap ratio)."),
    },
    Definition {
        key: "comm.DP_EP",
        label: "Exposed DP_EP comm",
        event: Some("Time the reference rank's compute waits for the gradient synchronisation of expert weights (data parallel within an expert group)."),
        simai: Some("Weight-gradient collectives over DP_EP groups (DP / EP ranks), each x (1 - DP overlap ratio)."),
    },
    Definition {
        key: "comm.PP",
        label: "Exposed PP comm",
        event: Some("Time the reference rank's compute waits for its own stage-to-stage sends and receives."),
        simai: Some("SimAI's pipeline-send formula: 2 x vpp x GA sends of the header's pp_comm bytes divided by the PP overlap ratio, x (1 - PP overlap ratio); 0 with the default ratio 1."),
    },
    Definition {
        key: "comm.CP",
        label: "Exposed CP comm",
        event: Some("Time the reference rank's compute waits for the context-parallel exchange of keys and values (an all-gather per layer, a reduce-scatter of their gradients in the backward; jobs with CP > 1 only)."),
        simai: None,
    },
    Definition {
        key: "other",
        label: "Other idle",
        event: Some("Idle time of the reference rank's compute that no waited-for task explains (e.g. before its first task)."),
        simai: None,
    },
    Definition {
        key: "host_bound",
        label: "Host-bound",
        event: Some("Time the reference rank's GPU waits for its host to launch kernels: the software stack's cost per kernel launch, exposed where the kernels are shorter than their launches or after a sync point (job panel: Software stack, CUDA graphs)."),
        simai: None,
    },
    Definition {
        key: "sync_stall",
        label: "Host sync stall",
        event: Some("Time the reference rank's host waits for its GPU at sync points (Megatron's all-to-all token dispatcher reads the token counts on the host before every MoE layer's experts; the optimizer's gradient-norm and found-inf checks): the device work still queued when the host got there. Not GPU idle time by itself."),
        simai: None,
    },
    Definition {
        key: "launch_queue_wait",
        label: "Launch queue wait",
        event: Some("Time the reference rank's host waits because the GPU's launch queue is full (1024 pending launches per stream by default; job panel: Launch queue depth): the host is as far ahead of the GPU as the queue lets it be. Host time, not GPU idle time."),
        simai: None,
    },
    Definition {
        key: "simai_bubble",
        label: "SimAI closed-form bubble",
        event: Some("For comparison: the bubble SimAI-Analytical's formula gives for this workload, (PP - 1) / (GA x vpp) x one stage's pass, on the same cluster."),
        simai: None,
    },
    Definition {
        key: "compute_scale",
        label: "Calibrated compute scale",
        event: Some("The factor every compute duration was multiplied by so that the simulation meets the measured iteration time."),
        simai: None,
    },
    Definition {
        key: "mfu",
        label: "MFU",
        event: Some("Model FLOPs utilisation: the model's FLOPs of one iteration (3 x forward, attention counted in full, no recompute) / (iteration time x GPUs x the GPU's dense peak at the GEMM precision)."),
        simai: None,
    },
    Definition {
        key: "model_tflops_per_gpu",
        label: "Model TFLOP/s per GPU",
        event: Some("The model's FLOPs of one iteration / iteration time / GPUs: comparable with published 'model TFLOP/s per GPU' without agreeing on a peak."),
        simai: None,
    },
    Definition {
        key: "tokens_per_second",
        label: "Tokens per second",
        event: Some("Global batch x sequence length / iteration time, for the whole job (not per GPU)."),
        simai: None,
    },
    Definition {
        key: "memory_peak",
        label: "Peak memory (largest stage)",
        event: Some("The largest stage's first-rank peak: weights, gradients and optimizer states (Megatron's bytes per parameter), activations held at the schedule's peak, and the output stage's logits."),
        simai: None,
    },
    Definition {
        key: "critical_path",
        label: "Critical path",
        event: Some("The chain of spans, each waiting for the one before, that sets the iteration time: shortening anything off it does not shorten the iteration."),
        simai: None,
    },
];

/// The one-line definition of figure `key` in `kind`'s mode.
pub fn definition(kind: ResultKind, key: &str) -> Option<&'static str> {
    let d = DEFINITIONS.iter().find(|d| d.key == key)?;
    match kind {
        ResultKind::Event => d.event,
        ResultKind::Simai => d.simai,
    }
}

/// What "measured" covers, per measured input format (its stable name).
pub const MEASURED: [(&str, &str); 4] = [
    (
        "echo-trace",
        "Echo traces time every op of the traced ranks (compute, collectives, pipeline sends and receives, the optimizer step); the measured iteration runs from a rank's first op to its optimizer step's end, over the traced ranks.",
    ),
    (
        "kineto-trace",
        "PyTorch profiler (Kineto) traces time every GPU kernel, copy and NCCL collective of the chosen ProfilerStep on each traced rank; the measured iteration is that step's span over the traced ranks (a set of some ranks of a larger job covers only those). Forward, backward and optimizer are told apart by what launched each kernel: the training loop's thread (forward), the autograd thread (backward), the optimizer's step.",
    ),
    (
        "chakra-et",
        "Chakra execution traces record each compute node's duration and every collective, send and receive with its size and group, but not how long the communication took nor when the iteration ended: nothing here is a measured iteration to compare with. The compute runs as recorded; the communication is costed by the configured network.",
    ),
    (
        "optimus-prime-log",
        "Optimus-Prime logs time forward passes only (each stage's forward per step) and the iteration's wall time; backward, communication and the optimizer are not timed, so the simulation estimates them (backward = backward factor x forward) and only the forward and iteration rows are measured.",
    ),
];

/// What "measured" covers for `format` (a [`trainscope_core::workload::Format`] name).
pub fn measured_covers(format: &str) -> Option<&'static str> {
    MEASURED.iter().find(|(f, _)| *f == format).map(|(_, s)| *s)
}
