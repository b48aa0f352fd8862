//! A generator of realistic multi-rank PyTorch profiler (Kineto) traces for
//! tests and benchmarks: pure and deterministic from a seed (no clock, no
//! IO). It writes what a data-parallel training job profiled with
//! `torch.profiler` writes per rank: `schemaVersion`, `deviceProperties`,
//! `distributedInfo` (rank, world size, backend, process-group config),
//! `traceEvents` with `M` metadata, host `ProfilerStep#N` annotations,
//! `cpu_op` / `cuda_runtime` launches (backward ones from the autograd
//! engine's own thread inside `autograd::engine::evaluate_function: ...`,
//! the optimizer's inside `Optimizer.step#AdamW.step`, as PyTorch writes
//! them), `record_param_comms` with the
//! collective arguments, and on the GPU (`pid` = device, `tid` = stream)
//! GEMM / attention / elementwise kernels on the compute stream, memcpy and
//! memset, NCCL kernels (`ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)`,
//! all-gathers) on a separate NCCL stream overlapping backward compute,
//! and `gpu_user_annotation` step marks. Times are microseconds with three
//! fractional digits, as PyTorch writes them.
//!
//! The ranks share one clock. A collective starts on each rank when that
//! rank launches it and ends on all ranks together, a transfer time after
//! the last rank arrived, so the waiting part of a collective kernel is real.
//! [`KinetoJob::slow_rank`] slows one rank's compute by a percentage (a
//! straggler). [`KinetoJob::expected`] gives the exact per-step facts the
//! generator used (step span, kernels, collectives per rank) so tests can
//! check a parser against them. Field names follow PyTorch's own output
//! (checked against PyTorch's `ParamCommsUtils` keys and Kineto's writer);
//! no trace of anyone else is copied.

use std::fmt::Write as _;

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct KinetoJob {
    pub seed: u64,
    pub world: u32,
    /// Profiled steps (`ProfilerStep#first_step ..`).
    pub steps: u32,
    pub first_step: u32,
    /// Transformer layers (each: 4 kernels forward, 6 backward).
    pub layers: u32,
    /// Layers per gradient bucket (one all-reduce per bucket).
    pub bucket_layers: u32,
    /// One rank's compute slowed by this many percent.
    pub slow_rank: Option<(u32, u32)>,
    /// Write `distributedInfo` (false: a trace of a non-distributed run).
    pub distributed_info: bool,
    /// NCCL kernels carry the collective args themselves (recent PyTorch);
    /// false: only `record_param_comms` does (joined by `External id`).
    pub args_on_kernel: bool,
}

impl Default for KinetoJob {
    fn default() -> Self {
        KinetoJob {
            seed: 1,
            world: 4,
            steps: 3,
            first_step: 5,
            layers: 4,
            bucket_layers: 2,
            slow_rank: None,
            distributed_info: true,
            args_on_kernel: true,
        }
    }
}

/// The facts of one step of one rank, as generated (integer ns).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepFacts {
    pub step: u32,
    /// GPU step annotation span.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Compute kernels (NCCL excluded), memcpy, memset, NCCL kernels.
    pub kernels: u64,
    pub memcpy: u64,
    pub memset: u64,
    pub collectives: u64,
    /// Sum of compute kernel durations.
    pub compute_ns: u64,
    /// Sum of NCCL kernel durations.
    pub comm_ns: u64,
}

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// `base` ± `spread_pct` percent.
    fn jitter(&mut self, base: u64, spread_pct: u64) -> u64 {
        let span = base * spread_pct / 100;
        if span == 0 {
            return base;
        }
        base - span + self.next() % (2 * span + 1)
    }
}

/// Microseconds with three decimals from ns (as PyTorch writes `ts`/`dur`;
/// the generator keeps ns multiples so the text is exact).
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

const HOST_PID: u64 = 41_000;
/// How far the host runs ahead of the GPU: each launch is this long before
/// its GPU op starts, each host `ProfilerStep#N` this long before the GPU one.
const HOST_LEAD_NS: u64 = 1_500_000;
const COMPUTE_STREAM: u32 = 7;
const NCCL_STREAM: u32 = 20;
const CLOCK_BASE_NS: u64 = 1_732_000_000_000_000_000;

const FWD: [(&str, u64); 4] = [
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        180_000,
    ),
    (
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
        140_000,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
        25_000,
    ),
    (
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
        18_000,
    ),
];
const BWD: [(&str, u64); 3] = [
    (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        200_000,
    ),
    (
        "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, false, false, false, false, true, false>(flash::Flash_bwd_params)",
        260_000,
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::gelu_backward_kernel_impl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::gelu_backward_kernel_impl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
        30_000,
    ),
];
const OPTIM: (&str, u64) = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, bool, float, float, float, float, float, float, bool*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, bool, float, float, float, float, float, float, bool*, float*)",
    90_000,
);
const ALLREDUCE: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
const ALLGATHER: &str = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

/// The host thread and region a GPU event is launched from, as PyTorch
/// writes them: the training loop's thread (forward), the autograd engine's
/// thread (backward, and DDP's gradient all-reduces from its hooks), the
/// loop's thread inside `Optimizer.step#AdamW.step`.
#[derive(Clone, Copy, PartialEq)]
enum Host {
    Main,
    Autograd,
    Optimizer,
}

/// One GPU event before writing.
struct GpuEv {
    host: Host,
    name: &'static str,
    cat: &'static str,
    stream: u32,
    start: u64,
    dur: u64,
    ext: u64,
    /// (collective name, nelems in, nelems out)
    coll: Option<(&'static str, u64, u64)>,
}

impl KinetoJob {
    fn scale(&self, rank: u32, ns: u64) -> u64 {
        match self.slow_rank {
            Some((r, pct)) if r == rank => ns + ns * u64::from(pct) / 100,
            _ => ns,
        }
    }

    /// Every rank's GPU events and step spans, simulated jointly.
    #[allow(clippy::type_complexity)]
    fn simulate(&self) -> Vec<(Vec<GpuEv>, Vec<(u32, u64, u64)>)> {
        let w = self.world.max(1) as usize;
        let mut rngs: Vec<Rng> = (0..w)
            .map(|r| Rng(self.seed ^ (0x5eed_0000 + r as u64 * 7919)))
            .collect();
        let mut out: Vec<(Vec<GpuEv>, Vec<(u32, u64, u64)>)> =
            (0..w).map(|_| (Vec::new(), Vec::new())).collect();
        let mut clock = vec![CLOCK_BASE_NS + 2_000_000; w];
        let mut ext = vec![100u64; w];
        let grad_elems_per_layer: u64 = 12 * 1024 * 1024;
        for s in 0..self.steps {
            let step = self.first_step + s;
            let step_start: Vec<u64> = clock.clone();
            // Input copy, a memset, an all-gather of parameters (as FSDP
            // would) then forward.
            let mut ag_launch = vec![0u64; w];
            for r in 0..w {
                let rank = r as u32;
                let rng = &mut rngs[r];
                let t = clock[r] + rng.jitter(8_000, 50);
                let d = rng.jitter(35_000, 10);
                ext[r] += 1;
                out[r].0.push(GpuEv {
                    name: "Memcpy HtoD (Pinned -> Device)",
                    cat: "gpu_memcpy",
                    stream: COMPUTE_STREAM,
                    start: t,
                    dur: d,
                    ext: ext[r],
                    coll: None,
                    host: Host::Main,
                });
                let t2 = t + d + 2_000;
                let d2 = 1_500;
                ext[r] += 1;
                out[r].0.push(GpuEv {
                    name: "Memset (Device)",
                    cat: "gpu_memset",
                    stream: COMPUTE_STREAM,
                    start: t2,
                    dur: d2,
                    ext: ext[r],
                    coll: None,
                    host: Host::Main,
                });
                clock[r] = t2 + d2;
                ag_launch[r] = clock[r] + self.scale(rank, rng.jitter(5_000, 40));
            }
            let ag_last = *ag_launch.iter().max().unwrap_or(&0);
            let ag_end = ag_last + 60_000;
            for r in 0..w {
                ext[r] += 1;
                out[r].0.push(GpuEv {
                    name: ALLGATHER,
                    cat: "kernel",
                    stream: NCCL_STREAM,
                    start: ag_launch[r],
                    dur: ag_end - ag_launch[r],
                    ext: ext[r],
                    coll: Some(("_allgather_base", 1 << 20, (1u64 << 20) * w as u64)),
                    host: Host::Main,
                });
                clock[r] = clock[r].max(ag_end);
            }
            // Forward.
            for _layer in 0..self.layers {
                for r in 0..w {
                    let rank = r as u32;
                    for (name, base) in FWD {
                        let rng = &mut rngs[r];
                        let gap = rng.jitter(3_000, 60);
                        let d = self.scale(rank, rng.jitter(base, 8));
                        ext[r] += 1;
                        out[r].0.push(GpuEv {
                            name,
                            cat: "kernel",
                            stream: COMPUTE_STREAM,
                            start: clock[r] + gap,
                            dur: d,
                            ext: ext[r],
                            coll: None,
                            host: Host::Main,
                        });
                        clock[r] += gap + d;
                    }
                }
            }
            // Backward with bucketed all-reduces on the NCCL stream.
            let mut nccl_free = clock.clone();
            let mut pending_layers = 0u32;
            for layer in 0..self.layers {
                for r in 0..w {
                    let rank = r as u32;
                    for (name, base) in BWD {
                        let rng = &mut rngs[r];
                        let gap = rng.jitter(3_000, 60);
                        let d = self.scale(rank, rng.jitter(base, 8));
                        ext[r] += 1;
                        out[r].0.push(GpuEv {
                            name,
                            cat: "kernel",
                            stream: COMPUTE_STREAM,
                            start: clock[r] + gap,
                            dur: d,
                            ext: ext[r],
                            coll: None,
                            host: Host::Autograd,
                        });
                        clock[r] += gap + d;
                    }
                }
                pending_layers += 1;
                let last_layer = layer + 1 == self.layers;
                if pending_layers == self.bucket_layers.max(1) || last_layer {
                    let elems = grad_elems_per_layer * u64::from(pending_layers);
                    pending_layers = 0;
                    let arrive: Vec<u64> = (0..w).map(|r| clock[r].max(nccl_free[r])).collect();
                    let last = *arrive.iter().max().unwrap_or(&0);
                    // Ring all-reduce of bf16 at ~100 GB/s bus bandwidth.
                    let bytes = elems * 2;
                    let xfer = 2 * bytes * (w as u64 - 1).max(1) / w as u64 / 100 + 15_000;
                    let end = last + xfer;
                    for r in 0..w {
                        ext[r] += 1;
                        out[r].0.push(GpuEv {
                            name: ALLREDUCE,
                            cat: "kernel",
                            stream: NCCL_STREAM,
                            start: arrive[r],
                            dur: end - arrive[r],
                            ext: ext[r],
                            coll: Some(("allreduce", elems, elems)),
                            host: Host::Autograd,
                        });
                        nccl_free[r] = end;
                    }
                }
            }
            // Optimizer after the last all-reduce.
            for r in 0..w {
                let rank = r as u32;
                let rng = &mut rngs[r];
                let start = clock[r].max(nccl_free[r]) + rng.jitter(4_000, 50);
                let d = self.scale(rank, rng.jitter(OPTIM.1, 5));
                ext[r] += 1;
                out[r].0.push(GpuEv {
                    name: OPTIM.0,
                    cat: "kernel",
                    stream: COMPUTE_STREAM,
                    start,
                    dur: d,
                    ext: ext[r],
                    coll: None,
                    host: Host::Optimizer,
                });
                clock[r] = start + d + 1_000;
                out[r].1.push((step, step_start[r], clock[r]));
            }
            // Ranks start the next step together (the next step's
            // all-gather synchronises them anyway).
            let next = *clock.iter().max().unwrap_or(&0) + 5_000;
            clock.fill(next);
        }
        out
    }

    /// Per rank and step, what was generated.
    pub fn expected(&self) -> Vec<Vec<StepFacts>> {
        self.simulate()
            .into_iter()
            .map(|(evs, steps)| {
                steps
                    .iter()
                    .map(|(step, s, e)| {
                        let mut f = StepFacts {
                            step: *step,
                            start_ns: *s,
                            end_ns: *e,
                            ..StepFacts::default()
                        };
                        for ev in evs.iter().filter(|ev| ev.start >= *s && ev.start < *e) {
                            match (ev.cat, ev.coll.is_some()) {
                                ("kernel", true) => {
                                    f.collectives += 1;
                                    f.comm_ns += ev.dur;
                                }
                                ("kernel", false) => {
                                    f.kernels += 1;
                                    f.compute_ns += ev.dur;
                                }
                                ("gpu_memcpy", _) => f.memcpy += 1,
                                _ => f.memset += 1,
                            }
                        }
                        f
                    })
                    .collect()
            })
            .collect()
    }

    /// The trace text of every rank, file names `rank<R>.pt.trace.json`.
    pub fn generate(&self) -> Vec<(String, String)> {
        self.simulate()
            .into_iter()
            .enumerate()
            .map(|(r, (evs, steps))| {
                (
                    format!("rank{r}.pt.trace.json"),
                    self.write_rank(r as u32, &evs, &steps),
                )
            })
            .collect()
    }

    /// A job of about `target_bytes` per rank (more layers), for benchmarks.
    pub fn sized(seed: u64, world: u32, target_bytes: usize) -> KinetoJob {
        let probe = KinetoJob {
            seed,
            world: 1,
            layers: 8,
            ..KinetoJob::default()
        };
        let per8 = probe.generate()[0].1.len().max(1);
        let layers = ((target_bytes as u128 * 8 / per8 as u128) as u32).max(1);
        KinetoJob {
            seed,
            world,
            layers,
            bucket_layers: 4,
            ..KinetoJob::default()
        }
    }

    fn write_rank(&self, rank: u32, evs: &[GpuEv], steps: &[(u32, u64, u64)]) -> String {
        let mut o = String::with_capacity(evs.len() * 900 + 4096);
        let w = self.world;
        o.push_str("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n");
        let _ = write!(
            o,
            "      \"id\": {rank}, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045379072,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472,\n      \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448\n    }}\n  ],\n"
        );
        if self.distributed_info {
            let ranks: Vec<String> = (0..w).map(|r| r.to_string()).collect();
            let _ = write!(
                o,
                "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {w}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {w}, \"ranks\": [{}]}}], \"nccl_version\": \"2.21.5\"}},",
                ranks.join(", ")
            );
            o.push('\n');
        }
        o.push_str("  \"record_shapes\": 1,\n  \"with_stack\": 0,\n  \"cuda_runtime_version\": 12040,\n  \"cupti_version\": 22,\n  \"cuda_driver_version\": 12040,\n  \"profile_memory\": 0,\n  \"trace_id\": \"6F3C1D0E2A5B4C7D8E9F0A1B2C3D4E5F\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeStamp\": 1732000000000000,\n  \"traceEvents\": [\n");
        let pid = HOST_PID + u64::from(rank);
        let mut first = true;
        let mut ev = |o: &mut String, text: String| {
            if !first {
                o.push_str(",\n");
            }
            first = false;
            o.push_str("  ");
            o.push_str(&text);
        };
        ev(&mut o, format!("{{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 1732000000000000.000, \"pid\": {pid}, \"tid\": 0, \"args\": {{\"name\": \"python3\"}}}}"));
        ev(&mut o, format!("{{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 1732000000000000.000, \"pid\": {rank}, \"tid\": 0, \"args\": {{\"name\": \"python3\"}}}}"));
        ev(&mut o, format!("{{\"name\": \"process_labels\", \"ph\": \"M\", \"ts\": 1732000000000000.000, \"pid\": {rank}, \"tid\": 0, \"args\": {{\"labels\": \"GPU {rank}\"}}}}"));
        for s in [COMPUTE_STREAM, NCCL_STREAM] {
            ev(&mut o, format!("{{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 1732000000000000.000, \"pid\": {rank}, \"tid\": {s}, \"args\": {{\"name\": \"stream {s}\"}}}}"));
        }
        // Host side: steps, then per GPU event its CPU op and launch. The
        // host runs HOST_LEAD_NS ahead of the GPU, so a host step holds the
        // launches of exactly the GPU work of its step.
        for (step, s, e) in steps {
            ev(&mut o, format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {pid}, \"tid\": {pid}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {step}, \"Record function id\": 0, \"Ev Idx\": {step}}}}}",
                us(s.saturating_sub(HOST_LEAD_NS)), us(e - s)));
        }
        let group: Vec<String> = (0..w).map(|r| r.to_string()).collect();
        let group = format!("[{}]", group.join(", "));
        for (k, g) in evs.iter().enumerate() {
            let launch = g.start.saturating_sub(HOST_LEAD_NS);
            let corr = 10_000 + k as u64;
            let (op, launch_name) = match (g.cat, g.coll) {
                ("kernel", Some(_)) => ("record_param_comms", "cudaLaunchKernel"),
                ("kernel", None) if g.host == Host::Autograd => (
                    "autograd::engine::evaluate_function: MmBackward0",
                    "cudaLaunchKernel",
                ),
                ("kernel", None) if g.host == Host::Optimizer => {
                    ("Optimizer.step#AdamW.step", "cudaLaunchKernel")
                }
                ("kernel", None) => ("aten::mm", "cudaLaunchKernel"),
                ("gpu_memcpy", _) => ("aten::copy_", "cudaMemcpyAsync"),
                _ => ("aten::zero_", "cudaMemsetAsync"),
            };
            let coll_args = match g.coll {
                Some((name, inn, out)) => format!(
                    ", \"Collective name\": \"{name}\", \"In msg nelems\": {inn}, \"Out msg nelems\": {out}, \"Group size\": {w}, \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"{group}\""
                ),
                None => String::new(),
            };
            // The autograd engine's thread: its own id, as PyTorch's are.
            let tid = if g.host == Host::Autograd {
                pid + 43
            } else {
                pid
            };
            let op_cat = if g.host == Host::Optimizer && g.cat == "kernel" {
                "user_annotation"
            } else {
                "cpu_op"
            };
            ev(&mut o, format!(
                "{{\"ph\": \"X\", \"cat\": \"{op_cat}\", \"name\": \"{op}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 6.250, \"args\": {{\"External id\": {}, \"Record function id\": 0, \"Sequence number\": {k}, \"Fwd thread id\": 0, \"Ev Idx\": {}{coll_args}}}}}",
                us(launch.saturating_sub(2_000)), g.ext, g.ext));
            ev(&mut o, format!(
                "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{launch_name}\", \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"dur\": 4.125, \"args\": {{\"External id\": {}, \"cbid\": 211, \"correlation\": {corr}}}}}",
                us(launch), g.ext));
            ev(&mut o, format!(
                "{{\"ph\": \"s\", \"id\": {corr}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\"}}",
                us(launch)));
        }
        // GPU side.
        for (step, s, e) in steps {
            ev(&mut o, format!(
                "{{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#{step}\", \"pid\": {rank}, \"tid\": {COMPUTE_STREAM}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {step}}}}}",
                us(*s), us(e - s)));
        }
        for (k, g) in evs.iter().enumerate() {
            let corr = 10_000 + k as u64;
            let coll_args = match (g.coll, self.args_on_kernel) {
                (Some((name, inn, out)), true) => format!(
                    ", \"Collective name\": \"{name}\", \"In msg nelems\": {inn}, \"Out msg nelems\": {out}, \"Group size\": {w}, \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"{group}\""
                ),
                _ => String::new(),
            };
            let detail = match g.cat {
                "kernel" => ", \"registers per thread\": 168, \"shared memory\": 98304, \"blocks per SM\": 1.939394, \"warps per SM\": 15.515152, \"grid\": [256, 1, 1], \"block\": [384, 1, 1], \"est. achieved occupancy %\": 12".to_string(),
                "gpu_memcpy" => ", \"bytes\": 33554432, \"memory bandwidth (GB/s)\": 958.7".to_string(),
                _ => ", \"bytes\": 4096, \"memory bandwidth (GB/s)\": 2.7".to_string(),
            };
            ev(&mut o, format!(
                "{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {rank}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"queued\": 0, \"device\": {rank}, \"context\": 1, \"stream\": {}, \"correlation\": {corr}{detail}{coll_args}}}}}",
                g.cat, g.name, g.stream, us(g.start), us(g.dur), g.ext, g.stream));
            ev(&mut o, format!(
                "{{\"ph\": \"f\", \"id\": {corr}, \"pid\": {rank}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
                g.stream, us(g.start)));
        }
        o.push_str("\n  ],\n  \"traceName\": \"/tmp/profile/rank");
        let _ = write!(o, "{rank}.pt.trace.json\"\n}}\n");
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_valid_json() {
        let job = KinetoJob::default();
        let a = job.generate();
        let b = job.generate();
        assert_eq!(a, b);
        assert_eq!(a.len(), 4);
        for (_, text) in &a {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert!(v["traceEvents"].as_array().unwrap().len() > 100);
        }
        let other = KinetoJob {
            seed: 2,
            ..KinetoJob::default()
        };
        assert_ne!(other.generate(), a);
    }

    #[test]
    fn slow_rank_is_slower_and_collectives_end_together() {
        let job = KinetoJob {
            slow_rank: Some((2, 30)),
            ..KinetoJob::default()
        };
        let facts = job.expected();
        let c0 = facts[0][0].compute_ns;
        let c2 = facts[2][0].compute_ns;
        assert!(c2 > c0 * 12 / 10, "{c0} {c2}");
        // The fast ranks wait: more NCCL time than the slow one.
        assert!(facts[0][0].comm_ns > facts[2][0].comm_ns);
    }
}
