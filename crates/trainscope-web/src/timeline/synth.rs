//! A deterministic synthetic pipeline run of any size, built with
//! [`TimelineBuilder`] like a measured run would be: `stages` stage groups
//! (compute, TP collective, DP collective, send and receive lanes), a GPipe
//! schedule of `micro_batches` forward and backward blocks per stage, each
//! block made of layers of short kernels followed by a TP all-reduce,
//! pipeline transfers with flows, DP all-reduces at the end, same-lane and
//! TP dependencies, and a critical path. Used by the benchmark page (a
//! million spans) and the browser tests (level-of-detail bounds).

use trainscope_core::timeline::{
    CollOp, Flow, Lane, LaneGroup, Span, SpanKind, SpanRef, Stream, Timeline as Model,
    TimelineBuilder,
};

/// Size of a synthetic run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthSpec {
    /// Pipeline stages (lane groups), at least 1.
    pub stages: u32,
    /// Micro-batches, at least 1.
    pub micro_batches: u32,
    /// Spans to aim for (the result is within a block of it).
    pub spans: usize,
    /// Record dependencies (kernel after kernel, all-reduce after kernel).
    pub dependencies: bool,
}

/// Kernel names of a layer (forward order).
const KERNELS: [&str; 7] = [
    "layernorm",
    "attn.qkv",
    "attn.flash",
    "attn.proj",
    "layernorm",
    "mlp.fc1",
    "mlp.fc2",
];

/// A tiny deterministic generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// Uniform in [lo, hi).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
}

fn span(start_ns: u64, duration_ns: u64, kind: SpanKind) -> Span {
    Span {
        start_ns,
        duration_ns,
        bytes: 0,
        label: trainscope_core::timeline::LabelId(0),
        layer: Span::NONE,
        micro_batch: Span::NONE,
        kind,
        coll: CollOp::None,
        chunk: 0,
    }
}

/// Build the synthetic run.
pub fn pipeline(spec: SynthSpec) -> Model {
    let stages = spec.stages.clamp(1, 4096);
    let mbs = spec.micro_batches.clamp(1, 1 << 16);
    let blocks = (stages as usize) * (mbs as usize) * 2;
    let per_layer = KERNELS.len() + 1;
    let layers = (spec.spans / blocks / per_layer).max(1) as u32;
    let mut b = TimelineBuilder::new();
    let mut rng = Lcg(0x7261_6e73_636f_7065);
    let kernel_labels: Vec<_> = ["fwd", "dgrad", "wgrad"]
        .iter()
        .map(|p| {
            KERNELS
                .iter()
                .map(|k| b.label(&format!("{k} {p}")))
                .collect::<Vec<_>>()
        })
        .collect();
    let ar = b.label("tp all_reduce");
    let send_l = b.label("pp send activations");
    let send_g = b.label("pp send gradients");
    let dp = b.label("dp all_reduce grads");
    let mut lanes = Vec::new();
    for s in 0..stages {
        let ids: Vec<u32> = Stream::DEVICE
            .iter()
            .map(|&stream| {
                b.lane(Lane {
                    group_kind: LaneGroup::Stage,
                    group: s,
                    stage: s,
                    stream,
                    name: format!("stage {s} / {}", stream.name()),
                })
            })
            .collect();
        lanes.push(ids);
    }
    let lane = |s: u32, st: Stream| lanes[s as usize][st.index() as usize];
    let mut free = vec![0u64; stages as usize];
    let mut last_compute: Vec<Option<SpanRef>> = vec![None; stages as usize];
    let mut crit: Vec<(u32, u32, bool, Vec<SpanRef>)> = Vec::new();
    let xfer_ns = 40_000u64;
    let act_bytes = 64u64 << 20;
    // ready[s][m]: when stage s may start block m (after the transfer).
    let mut ready = vec![vec![0u64; mbs as usize]; stages as usize];
    for backward in [false, true] {
        let order: Vec<u32> = if backward {
            (0..stages).rev().collect()
        } else {
            (0..stages).collect()
        };
        for (pos, &s) in order.iter().enumerate() {
            for m in 0..mbs {
                let si = s as usize;
                let mut t = free[si].max(ready[si][m as usize]);
                // Only blocks on the critical path keep their references
                // (see below).
                let last = stages - 1;
                let critical = if backward {
                    s == last || m == mbs - 1
                } else {
                    s == last || m == 0
                };
                let mut refs = Vec::new();
                for l in 0..layers {
                    let layer = if backward { layers - 1 - l } else { l };
                    for (k, _) in KERNELS.iter().enumerate() {
                        let (kind, labels) = if !backward {
                            (SpanKind::Forward, &kernel_labels[0])
                        } else if k % 2 == 0 {
                            (SpanKind::InputGrad, &kernel_labels[1])
                        } else {
                            (SpanKind::WeightGrad, &kernel_labels[2])
                        };
                        let d = rng.range(5_000, 40_000) * if backward { 2 } else { 1 };
                        let mut sp = span(t, d, kind);
                        sp.label = labels[k];
                        sp.layer = layer;
                        sp.micro_batch = m;
                        let on = lane(s, Stream::Compute);
                        let keep = critical.then_some(&mut refs);
                        chain(
                            &mut b,
                            on,
                            sp,
                            spec.dependencies,
                            &mut last_compute[si],
                            keep,
                        );
                        t += d;
                    }
                    let d = rng.range(15_000, 45_000);
                    let mut sp = span(t, d, SpanKind::CollTp);
                    sp.label = ar;
                    sp.layer = layer;
                    sp.micro_batch = m;
                    sp.coll = CollOp::AllReduce;
                    sp.bytes = 16 << 20;
                    let on = lane(s, Stream::Collective);
                    let keep = critical.then_some(&mut refs);
                    chain(
                        &mut b,
                        on,
                        sp,
                        spec.dependencies,
                        &mut last_compute[si],
                        keep,
                    );
                    t += d;
                }
                free[si] = t;
                // Transfer to the next stage in this direction.
                if let Some(&next) = order.get(pos + 1) {
                    let mut sp = span(t, xfer_ns, SpanKind::Send);
                    sp.label = if backward { send_g } else { send_l };
                    sp.micro_batch = m;
                    sp.bytes = act_bytes;
                    sp.coll = CollOp::SendRecv;
                    let from = b.push(lane(s, Stream::Send), sp);
                    let to = b.push(
                        lane(next, Stream::Recv),
                        Span {
                            kind: SpanKind::Recv,
                            ..sp
                        },
                    );
                    b.flow(Flow {
                        from,
                        to,
                        bytes: act_bytes,
                        micro_batch: m,
                    });
                    if spec.dependencies {
                        b.dependency(from, to);
                    }
                    ready[next as usize][m as usize] = t + xfer_ns;
                }
                if critical {
                    crit.push((s, m, backward, refs));
                }
            }
        }
        if !backward {
            // Backward starts on the last stage after its forwards.
            for row in ready.iter_mut() {
                row.iter_mut().for_each(|r| *r = 0);
            }
        }
    }
    // DP all-reduce of each stage's gradients, 4 buckets.
    for s in 0..stages {
        let mut t = free[s as usize];
        for _ in 0..4 {
            let d = rng.range(2_000_000, 4_000_000);
            let mut sp = span(t, d, SpanKind::CollDp);
            sp.label = dp;
            sp.bytes = 512 << 20;
            sp.coll = CollOp::AllReduce;
            b.push(lane(s, Stream::GradSync), sp);
            t += d;
        }
    }
    // Critical path: micro-batch 0's forwards down the pipeline, the last
    // stage's forwards and backwards, then the last micro-batch's
    // backwards back up.
    let last = stages - 1;
    let mut path = Vec::new();
    let mut pick = |f: &dyn Fn(u32, u32, bool) -> bool| {
        for (s, m, bw, refs) in &crit {
            if f(*s, *m, *bw) {
                path.extend_from_slice(refs);
            }
        }
    };
    pick(&|s, m, bw| !bw && m == 0 && s < last);
    pick(&|s, _, bw| !bw && s == last);
    pick(&|s, _, bw| bw && s == last);
    let mut up: Vec<&(u32, u32, bool, Vec<SpanRef>)> = crit
        .iter()
        .filter(|(s, m, bw, _)| *bw && *m == mbs - 1 && *s < last)
        .collect();
    up.sort_by_key(|(s, ..)| std::cmp::Reverse(*s));
    for (_, _, _, refs) in up {
        path.extend_from_slice(refs);
    }
    b.critical_path(path);
    b.build()
}

/// Push `sp` on `lane` as the next link of a stage's chain: it depends on
/// the previous link (when `deps`), becomes `last`, and its reference is
/// kept in `refs` (blocks on the critical path).
fn chain(
    b: &mut TimelineBuilder,
    lane: u32,
    sp: Span,
    deps: bool,
    last: &mut Option<SpanRef>,
    refs: Option<&mut Vec<SpanRef>>,
) {
    let r = b.push(lane, sp);
    if deps {
        if let Some(p) = *last {
            b.dependency(p, r);
        }
    }
    *last = Some(r);
    if let Some(refs) = refs {
        refs.push(r);
    }
}
