#!/usr/bin/env python3
"""Reference measurements of one NVIDIA GPU for trainscope's time model.

Run on a machine with a CUDA GPU and PyTorch (nothing in trainscope's build
or tests needs one). Writes into the folder given as the first argument:

  env.json         GPU, driver, PyTorch and CUDA versions, clocks
  gemm.csv         dense GEMM throughput by shape, layout and precision
  attention.csv    fused attention (SDPA) forward and forward+backward
  memory.csv       bandwidth-bound kernels (copy, add, RMSNorm, SwiGLU,
                   softmax, cross-entropy) by size
  launch.csv       host costs: per eager op (with and without autograd, and
                   in autograd's backward), per CUDA graph replay, per
                   torch.compile call, a .item() round trip, and the
                   launch queue's depth behind a running kernel
  moe.csv          one rank's MoE layer of Qwen3-30B-A3B's shape (EP 8):
                   router, permutation, expert GEMMs (per-expert loop,
                   grouped, one GEMM), forward + backward, eager and graphed,
                   with kernel counts
  train.csv        whole training steps of Llama-shaped models built from a
                   config.json with HuggingFace transformers (time, memory)
  accum.csv        one optimizer step over 1-8 micro-batches (gradient
                   accumulation) of the same Llama shapes, eager
  config-*.json    the config.json of each trained model
  kineto-*.json.gz PyTorch profiler traces of some of those steps

Method: CUDA events around each region after warm-up; every figure is the
median of repeated runs; inputs are random (never zeros); buffers rotate
when an input set fits in L2. Each section catches its own failure so one
error costs one section, not the run.

Kernel sweeps (GEMM, attention, bandwidth) time `reps` calls captured in a
CUDA graph and divide, so each figure is the kernels' own time without the
Python dispatch of each call; training steps are timed whole, as a user
runs them.

Usage: python3 scripts/measure-gpu.py OUT_DIR [--quick] [--only=gemm,attention,...]
"""
import csv
import gzip
import json
import os
import shutil
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "gpu-out"
QUICK = "--quick" in sys.argv
os.makedirs(OUT, exist_ok=True)
DEV = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def log(*a):
    print(*a, flush=True)


def bench(fn, min_ms=30.0, max_iters=200, warmup=3):
    """Median time of fn() in ms, by CUDA events, after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    total = 0.0
    while (total < min_ms or len(times) < 5) and len(times) < max_iters:
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        t = s.elapsed_time(e)
        times.append(t)
        total += t
    return statistics.median(times), len(times)


def bench_graph(fn, reps=20, min_ms=30.0, max_replays=100):
    """Median time of one fn() in ms, measured on the GPU alone: `reps`
    calls captured in a CUDA graph, the graph replayed between CUDA events,
    divided by `reps` (so the Python dispatch and launch latency of each
    call stay out of the figure: a kernel's own time). Falls back to a
    timed loop of `reps` back-to-back calls when capture fails."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn()
        run = g.replay
        how = "graph"
    except Exception:  # noqa: BLE001
        torch.cuda.synchronize()

        def run():
            for _ in range(reps):
                fn()
        how = "loop"
    t, n = bench(run, min_ms=min_ms, max_iters=max_replays, warmup=2)
    return t / reps, n * reps, how


def section(name):
    def wrap(f):
        def run():
            t0 = time.time()
            log(f"== {name}")
            try:
                f()
            except Exception:
                traceback.print_exc()
                log(f"!! section {name} failed")
            log(f"== {name} done in {time.time() - t0:.1f} s")
        return run
    return wrap


@section("env")
def env():
    p = torch.cuda.get_device_properties(0)
    info = {
        "gpu": torch.cuda.get_device_name(0),
        "sm_count": p.multi_processor_count,
        "memory_bytes": p.total_memory,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }
    try:
        import subprocess
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit",
             "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except Exception as e:  # noqa: BLE001
        info["nvidia_smi"] = f"unavailable: {e}"
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        info["transformers"] = None
    with open(os.path.join(OUT, "env.json"), "w") as f:
        json.dump(info, f, indent=2)
    log(json.dumps(info))


def rotating(make, nbytes_one):
    """Enough input sets that together they exceed L2 (about 50 MB)."""
    n = max(1, min(8, int(200e6 // max(nbytes_one, 1)) + 1)) if nbytes_one < 200e6 else 1
    return [make() for _ in range(n)]


@section("gemm")
def gemm():
    ms = [256, 512, 1024, 2048, 4096, 8192, 16384]
    nk = [1024, 2048, 4096, 8192, 14336, 28672]
    if QUICK:
        ms, nk = [1024, 4096], [1024, 4096]
    rows = []
    fp8 = hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")
    for m in ms:
        for n in nk:
            for k in nk:
                flops = 2.0 * m * n * k
                if flops > 4e13:
                    continue  # over ~50 ms each: the curve is flat there
                # Layouts: nn = x[m,k] @ w[k,n] (forward), nt = x @ w[n,k]^T
                # (forward with nn.Linear weights), tn = x[k,m]^T @ g[k,n]
                # (weight gradient).
                for layout in ("nt", "nn", "tn"):
                    def make():
                        if layout == "nn":
                            return (torch.randn(m, k, device=DEV, dtype=torch.bfloat16),
                                    torch.randn(k, n, device=DEV, dtype=torch.bfloat16))
                        if layout == "nt":
                            return (torch.randn(m, k, device=DEV, dtype=torch.bfloat16),
                                    torch.randn(n, k, device=DEV, dtype=torch.bfloat16).t())
                        return (torch.randn(k, m, device=DEV, dtype=torch.bfloat16).t(),
                                torch.randn(k, n, device=DEV, dtype=torch.bfloat16))
                    sets = rotating(make, 2 * (m * k + k * n))
                    i = [0]

                    def fn():
                        a, b = sets[i[0] % len(sets)]
                        i[0] += 1
                        torch.mm(a, b)
                    t, it, how = bench_graph(fn, reps=max(2, min(50, int(5e12 // flops))))
                    rows.append(dict(precision="bf16", layout=layout, m=m, n=n, k=k,
                                     flops=flops, time_ms=t, tflops=flops / t / 1e9, iters=it,
                                     timing=how))
                    del sets
                if fp8:
                    try:
                        def make8():
                            a = torch.randn(m, k, device=DEV).to(torch.float8_e4m3fn)
                            b = torch.randn(n, k, device=DEV).to(torch.float8_e4m3fn).t()
                            return a, b
                        sets = rotating(make8, m * k + k * n)
                        one = torch.tensor(1.0, device=DEV)
                        i = [0]

                        def fn8():
                            a, b = sets[i[0] % len(sets)]
                            i[0] += 1
                            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                        t, it, how = bench_graph(fn8, reps=max(2, min(50, int(1e13 // flops))))
                        rows.append(dict(precision="fp8", layout="nt", m=m, n=n, k=k,
                                         flops=flops, time_ms=t, tflops=flops / t / 1e9, iters=it,
                                         timing=how))
                        del sets
                    except Exception as e:  # noqa: BLE001
                        log(f"fp8 {m}x{n}x{k}: {e}")
                        fp8 = False
        log(f"gemm m={m} done, {len(rows)} rows")
    # A few fp32 (no TF32) points.
    for s in ([2048, 4096, 8192] if not QUICK else [1024]):
        a = torch.randn(s, s, device=DEV)
        b = torch.randn(s, s, device=DEV)
        t, it, how = bench_graph(lambda: torch.mm(a, b), reps=4)
        f = 2.0 * s ** 3
        rows.append(dict(precision="fp32", layout="nn", m=s, n=s, k=s, flops=f,
                         time_ms=t, tflops=f / t / 1e9, iters=it, timing=how))
    write_csv("gemm.csv", rows)


@section("attention")
def attention():
    rows = []
    seqs = [512, 1024, 2048, 4096, 8192, 16384] if not QUICK else [1024]
    for d in (128, 64):
        for s in seqs:
            for h in (8, 32):
                b = max(1, 16384 // s)
                q = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                g = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16)
                # Causal FLOPs: half of the two s x s x d products.
                fwd_flops = 4.0 * b * h * s * s * d / 2
                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=True)
                tf, _, how_f = bench_graph(fwd, reps=10)

                def fb():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    o.backward(g)
                tfb, _, how_b = bench_graph(fb, reps=10)
                rows.append(dict(head_dim=d, seq=s, heads=h, batch=b, fwd_flops=fwd_flops,
                                 fwd_ms=tf, fwd_bwd_ms=tfb, fwd_tflops=fwd_flops / tf / 1e9,
                                 fwd_bwd_tflops=3.5 * fwd_flops / tfb / 1e9,
                                 timing=f"{how_f}/{how_b}"))
                log(rows[-1])
    write_csv("attention.csv", rows)


@section("memory")
def memory():
    rows = []
    sizes = [2 ** p for p in range(16, 31, 1)] if not QUICK else [2 ** 20, 2 ** 26]
    hidden = 4096
    for nbytes in sizes:
        n = nbytes // 2  # bf16 elements
        rows_n = max(1, n // hidden)

        def add_row(kind, fn, moved):
            t, it, how = bench_graph(fn, reps=max(2, min(20, int(2e9 // nbytes))))
            rows.append(dict(kernel=kind, tensor_bytes=nbytes, bytes_moved=moved,
                             time_ms=t, gbps=moved / t / 1e6, iters=it, timing=how))
        x = torch.randn(n, device=DEV, dtype=torch.bfloat16)
        y = torch.randn(n, device=DEV, dtype=torch.bfloat16)
        o = torch.empty_like(x)
        add_row("copy", lambda: o.copy_(x), 2 * nbytes)
        add_row("add", lambda: torch.add(x, y, out=o), 3 * nbytes)
        x2 = x[: rows_n * hidden].view(rows_n, hidden)
        w = torch.randn(hidden, device=DEV, dtype=torch.bfloat16)
        if hasattr(F, "rms_norm"):
            add_row("rms_norm", lambda: F.rms_norm(x2, (hidden,), w), 2 * x2.numel() * 2)
        add_row("rms_norm_unfused",
                lambda: x2 * torch.rsqrt(x2.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x2.dtype) * w,
                2 * x2.numel() * 2)
        add_row("silu_mul", lambda: F.silu(x) * y, 3 * nbytes)
        add_row("softmax", lambda: torch.softmax(x2, dim=-1), 2 * x2.numel() * 2)
        vocab = 32768
        if n >= vocab:
            logits = x[: (n // vocab) * vocab].view(-1, vocab)
            tgt = torch.randint(0, vocab, (logits.shape[0],), device=DEV)
            add_row("cross_entropy", lambda: F.cross_entropy(logits.float(), tgt), logits.numel() * 2 * 3)
        del x, y, o
    write_csv("memory.csv", rows)


def write_csv(name, rows):
    if not rows:
        return
    keys = list(rows[0].keys())
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(os.path.join(OUT, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    log(f"wrote {name}: {len(rows)} rows")


MODELS = {
    # Llama 3.2 1B's published config.json shape.
    "llama3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                        tie_word_embeddings=True),
    # Llama 3 8B's layer shape with 8 of its 32 layers (fits one GPU with Adam).
    "llama3-8b-8layers": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=8,
                              num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                              tie_word_embeddings=False),
}


@section("train")
def train():
    from transformers import LlamaConfig, LlamaForCausalLM
    rows = []
    cases = [(name, mb, seq, False) for name in MODELS for seq in (2048, 4096) for mb in (1, 2, 4)]
    # The same steps with torch.compile (fused element-wise kernels).
    cases += [("llama3.2-1b", 2, 2048, True), ("llama3.2-1b", 4, 2048, True), ("llama3-8b-8layers", 2, 2048, True)]
    if QUICK:
        cases = [("llama3.2-1b", 1, 512, False)]
    for name, mb, seq, compiled in cases:
        spec = dict(MODELS[name], max_position_embeddings=max(seq, 8192), rms_norm_eps=1e-5,
                    rope_theta=500000.0, hidden_act="silu", model_type="llama",
                    architectures=["LlamaForCausalLM"], torch_dtype="bfloat16")
        with open(os.path.join(OUT, f"config-{name}.json"), "w") as f:
            json.dump(spec, f, indent=2)
        try:
            cfg = LlamaConfig(**{k: v for k, v in spec.items() if k not in ("model_type", "architectures", "torch_dtype")})
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            with torch.device(DEV):
                model = LlamaForCausalLM(cfg)  # fp32 weights: mixed precision by autocast
            model.float()
            params = sum(p.numel() for p in model.parameters())
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
            ids = torch.randint(0, spec["vocab_size"], (mb, seq), device=DEV)
            holder = {"net": torch.compile(model) if compiled else model}

            def step():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = holder["net"](input_ids=ids, labels=ids).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            step()
            torch.cuda.synchronize()
            static = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            t, it = bench(step, min_ms=1500, max_iters=10, warmup=2)
            peak = torch.cuda.max_memory_allocated()
            tok = mb * seq / (t / 1e3)
            rows.append(dict(model=name, compiled=compiled, parameters=params, micro_batch=mb, seq=seq, step_ms=t,
                             iters=it, tokens_per_s=tok, static_bytes=static, peak_bytes=peak,
                             attention=str(getattr(model.config, "_attn_implementation", "?")),
                             recipe="fp32 weights, torch.autocast bf16, fused AdamW"))
            log(rows[-1])
            if not compiled and ((name == "llama3.2-1b" and mb == 2 and seq == 2048) or (name == "llama3-8b-8layers" and mb == 1 and seq == 4096)):
                profile(model, holder, step, f"kineto-{name}-mb{mb}-s{seq}")
            del model, opt, ids
        except torch.cuda.OutOfMemoryError:
            rows.append(dict(model=name, compiled=compiled, micro_batch=mb, seq=seq, step_ms="oom"))
            log(f"{name} mb={mb} seq={seq}: out of memory")
            model = opt = ids = None
        torch.cuda.empty_cache()
    write_csv("train.csv", rows)


@section("accum")
def accum():
    """Gradient accumulation: one optimizer step over k micro-batches of 1
    sequence (k = 1, 2, 4, 8), eager, the train section's recipe. Against
    train.csv's one micro-batch of k sequences this shows what a
    micro-batch costs beyond its tokens (its host launches, the gradient
    accumulation into .grad). accum.csv: model, micro_batch, accumulation,
    seq, step_ms, per_micro_batch_ms (the step's growth per added micro-batch)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    rows = []
    seq = 2048 if not QUICK else 512
    for name in (MODELS if not QUICK else ["llama3.2-1b"]):
        spec = dict(MODELS[name], max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
                    hidden_act="silu")
        try:
            torch.cuda.empty_cache()
            with torch.device(DEV):
                model = LlamaForCausalLM(LlamaConfig(**spec))
            model.float()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
            ids = torch.randint(0, spec["vocab_size"], (1, seq), device=DEV)
            first = None
            for k in (1, 2, 4, 8):
                def step():
                    for _ in range(k):
                        with torch.autocast("cuda", dtype=torch.bfloat16):
                            loss = model(input_ids=ids, labels=ids).loss / k
                        loss.backward()
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                step()
                torch.cuda.synchronize()
                t, it = bench(step, min_ms=1500, max_iters=10, warmup=1)
                first = t if k == 1 else first
                rows.append(dict(model=name, micro_batch=1, accumulation=k, seq=seq, step_ms=t, iters=it,
                                 per_micro_batch_ms=(t - first) / (k - 1) if k > 1 else ""))
                log(rows[-1])
            del model, opt, ids
        except torch.cuda.OutOfMemoryError:
            rows.append(dict(model=name, micro_batch=1, seq=seq, step_ms="oom"))
            log(f"{name}: out of memory")
            model = opt = ids = None
        torch.cuda.empty_cache()
    write_csv("accum.csv", rows)


def profile(model, holder, step, stem):
    """Three steps under the profiler (one warm-up, two recorded). The model
    is wrapped in DistributedDataParallel over a one-rank NCCL group where
    that works, so the trace carries distributedInfo and NCCL kernels as a
    data-parallel job's rank writes them."""
    from torch.profiler import ProfilerActivity, profile as prof, schedule
    path = os.path.join(OUT, stem + ".json")
    try:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        if not dist.is_initialized():
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29511", rank=0, world_size=1)
        holder["net"] = DDP(model)
        step()
        log("profiling with DDP over a one-rank NCCL group")
    except Exception as e:  # noqa: BLE001
        holder["net"] = model
        log(f"no DDP ({e}); profiling without")
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
              schedule=schedule(wait=0, warmup=1, active=2, repeat=1), record_shapes=False,
              on_trace_ready=lambda p: p.export_chrome_trace(path)) as p:
        for _ in range(4):
            step()
            p.step()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    log(f"wrote {stem}.json.gz: {os.path.getsize(path + '.gz')} bytes")
    holder["net"] = model


def host_loop(fn, n):
    """Host wall time of n back-to-back calls of fn, in microseconds per
    call, the GPU idle before and drained after (torch.cuda.synchronize
    both sides); with kernels shorter than their launch this is the host's
    own cost per call (Python dispatch + the CUDA launch)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / n


def median_of(f, repeat=5):
    return statistics.median(f() for _ in range(repeat))


@section("launch")
def launch():
    """Host-side costs trainscope's stacks charge (crates/trainscope-core
    src/model/stack*: per-kernel launch, graph launch, sync, queue depth).

    launch.csv rows (kind, what, value, unit):
    - eager_op: host us per call of one tiny op (one kernel each) with and
      without autograd recording, and per op of an autograd backward;
    - graph: host us per replay of a captured graph of N tiny kernels, and
      GPU us per kernel inside it;
    - compiled: host us per call of a torch.compile'd chain of element-wise
      ops (one fused kernel), default and "reduce-overhead" (CUDA graphs);
    - sync: us of a .item() round trip with the GPU idle;
    - queue_depth: how many launches the host makes behind one long kernel
      before a launch blocks (the driver's pending-launch queue)."""
    rows = []
    n = 2000 if not QUICK else 200
    x = torch.randn(16, device=DEV)
    y = torch.randn(16, device=DEV)
    w = torch.randn(16, 16, device=DEV)

    def add(kind, what, value, unit):
        rows.append(dict(kind=kind, what=what, value=round(value, 3), unit=unit))
        log(rows[-1])

    ops = {
        "add_": lambda: x.add_(1.0),
        "mul": lambda: x * y,
        "linear_16": lambda: F.linear(x, w),
        "silu": lambda: F.silu(x),
        "cat2": lambda: torch.cat([x, y]),
    }
    for name, fn in ops.items():
        add("eager_op", f"{name} no_grad", median_of(lambda: host_loop(fn, n)), "us/call")
    xg = torch.randn(16, device=DEV, requires_grad=True)
    add("eager_op", "mul autograd", median_of(lambda: host_loop(lambda: xg * y, n)), "us/call")

    # Backward: a chain of k element-wise ops, backward timed on the host
    # (the autograd engine's thread launches one or two kernels per op).
    k = 200

    def chain():
        h = xg
        for _ in range(k):
            h = h * 1.0001
        return h.sum()

    def fwd_bwd_us():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = chain()
        t1 = time.perf_counter()
        loss.backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        return (t1 - t0) * 1e6 / k, (t2 - t1) * 1e6 / k
    fwd_bwd_us()
    pairs = [fwd_bwd_us() for _ in range(5)]
    add("eager_op", f"chain of {k} mul, forward with autograd", statistics.median(p[0] for p in pairs), "us/op")
    add("eager_op", f"chain of {k} mul, backward (autograd engine)", statistics.median(p[1] for p in pairs), "us/op")

    # CUDA graph of N tiny kernels: host cost of one replay, GPU per kernel.
    for kernels in (1, 10, 100, 1000):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(kernels):
                x.add_(1.0)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(kernels):
                x.add_(1.0)
        reps = max(20, 2000 // kernels)
        add("graph", f"replay of {kernels} kernels, host", median_of(lambda: host_loop(g.replay, reps)), "us/replay")
        t, _ = bench(g.replay, min_ms=20, max_iters=200)
        add("graph", f"replay of {kernels} kernels, GPU per kernel", t * 1e3 / kernels, "us/kernel")
        del g

    # torch.compile: a chain of 8 element-wise ops fused into one kernel.
    def ew(a, b):
        return ((a * b + 1.0).sin() * 0.5 + a).relu() * b - a
    for mode in ("default", "reduce-overhead"):
        try:
            cf = torch.compile(ew, mode=mode)
            for _ in range(5):
                cf(x, y)
            add("compiled", f"8 element-wise ops, mode {mode}", median_of(lambda: host_loop(lambda: cf(x, y), n)), "us/call")
        except Exception as e:  # noqa: BLE001
            log(f"compile {mode}: {e}")
    add("compiled", "same 8 ops eager (8 kernels)", median_of(lambda: host_loop(lambda: ew(x, y), n)), "us/call")

    # .item() round trip with an idle GPU.
    def item_us():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(100):
            x.sum().item()
        return (time.perf_counter() - t0) * 1e6 / 100
    add("sync", ".item() of a reduction, GPU idle (incl. the reduction's launch)", median_of(item_us), "us")

    # Launch queue depth: one long kernel (torch.cuda._sleep), then tiny
    # launches timed one by one; where a launch first takes far longer than
    # the median, the queue was full.
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda.synchronize()
        torch.cuda._sleep(1_000_000)  # warm the kernel
        torch.cuda.synchronize()
        cycles = 2_000_000_000  # ~1 s at ~2 GHz: longer than filling the queue
        torch.cuda._sleep(cycles)
        times = []
        for _ in range(6000):
            t0 = time.perf_counter()
            x.add_(1.0)
            times.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        med = statistics.median(times)
        blocked = next((i for i, t in enumerate(times) if t > max(50 * med, 1e-3)), None)
        add("queue_depth", "launches accepted behind a running kernel before one blocks",
            -1 if blocked is None else blocked, "kernels")
        add("queue_depth", "median launch while the queue fills", med * 1e6, "us")
    write_csv("launch.csv", rows)


# Qwen3-30B-A3B's MoE layer (its config.json: hidden 2048, 128 experts,
# 8 per token, expert intermediate 768) as one rank of EP 8 runs it: 16
# local experts, a micro-batch of 4,096 tokens routed top-8.
MOE = dict(hidden=2048, experts=128, top_k=8, ffn=768, ep=8, tokens=4096)
# Other published MoE shapes (config.json of each model), one rank of a
# typical expert-parallel layout, and routing skew (local expert e gets a
# share of the rows proportional to 1/(e+1)^skew; 0 = balanced).
MOE_SHAPES = [
    ("qwen3-30b-a3b ep8", MOE, 0.0),
    ("qwen3-30b-a3b ep8 skew1", MOE, 1.0),
    ("qwen3-30b-a3b ep8 16k tokens", dict(MOE, tokens=16384), 0.0),
    ("qwen3-235b-a22b ep32", dict(hidden=4096, experts=128, top_k=8, ffn=1536, ep=32, tokens=4096), 0.0),
    ("deepseek-v3 ep64", dict(hidden=7168, experts=256, top_k=8, ffn=2048, ep=64, tokens=4096), 0.0),
    ("mixtral-8x7b ep8", dict(hidden=4096, experts=8, top_k=2, ffn=14336, ep=8, tokens=4096), 0.0),
]


@section("moe")
def moe():
    rows = []
    for label, c, skew in (MOE_SHAPES if not QUICK else MOE_SHAPES[:1]):
        try:
            rows += moe_one(label, c, skew)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            rows.append(dict(shape=label, variant="all", eager_ms="failed"))
        torch.cuda.empty_cache()
    write_csv("moe.csv", rows)


def moe_one(label, c, skew):
    """One rank's MoE layer in plain PyTorch, forward + backward, bf16:
    the router (linear, softmax, top-k, aux loss), the permutation of the
    token copies by expert, the local experts' SwiGLU GEMMs (as a loop of
    one GEMM per expert as Megatron's SequentialMLP does, as
    torch._grouped_mm where this PyTorch has it, and as one GEMM of all
    rows for comparison), and the unpermutation. No communication: the
    all-to-all's bytes and time are a network figure. Each variant: the
    GPU's own time (CUDA graph replay, static shapes) and the eager time as
    a user runs it (host launches included), and its kernel count (one
    profiled step). moe.csv: variant, timing, ms, kernels."""
    local = c["experts"] // c["ep"]
    rows_per_expert = c["tokens"] * c["top_k"] // c["experts"] * c["ep"]  # balanced: 2048
    m_total = rows_per_expert * local
    h, f = c["hidden"], c["ffn"]
    bf = torch.bfloat16
    torch.manual_seed(0)
    x_tok = torch.randn(c["tokens"], h, device=DEV, dtype=bf, requires_grad=True)
    w_router = torch.randn(c["experts"], h, device=DEV, dtype=bf, requires_grad=True)
    w1 = torch.randn(local, 2 * f, h, device=DEV, dtype=bf) * 0.02
    w2 = torch.randn(local, h, f, device=DEV, dtype=bf) * 0.02
    w1.requires_grad_()
    w2.requires_grad_()
    # The rows this rank's experts receive (from all EP ranks), balanced.
    x_in = torch.randn(m_total, h, device=DEV, dtype=bf, requires_grad=True)
    g_out = torch.randn(m_total, h, device=DEV, dtype=bf)
    if skew > 0:
        share = [1.0 / (e + 1) ** skew for e in range(local)]
        splits = [max(1, int(m_total * w / sum(share))) for w in share]
        splits[0] += m_total - sum(splits)
    else:
        splits = [rows_per_expert] * local
    expert_of_row = torch.repeat_interleave(torch.arange(local, device=DEV), torch.tensor(splits, device=DEV))
    perm = torch.randperm(m_total, device=DEV)
    offs = torch.tensor([sum(splits[: i + 1]) for i in range(local)], device=DEV, dtype=torch.int32)

    def router():
        logits = x_tok @ w_router.t()
        probs = torch.softmax(logits.float(), dim=-1)
        top_p, top_i = torch.topk(probs, c["top_k"], dim=-1)
        top_p = top_p / top_p.sum(-1, keepdim=True)
        # Switch-style aux loss: fraction routed x mean probability.
        counts = torch.zeros(c["experts"], device=DEV).scatter_add_(0, top_i.flatten(), torch.ones_like(top_i.flatten(), dtype=torch.float))
        aux = (counts / top_i.numel() * probs.mean(0)).sum() * c["experts"]
        (top_p.sum() * 0 + aux).backward()

    def permute_unpermute():
        order = torch.argsort(expert_of_row[perm], stable=True)
        xp = x_in.index_select(0, order)
        out = torch.zeros_like(x_in).index_add_(0, order, xp)
        out.backward(g_out)

    # Megatron's SequentialMLP holds each local expert's weights as its own
    # parameters: a loop over separate leaves. (A loop over views w1[e] of
    # one stacked tensor costs more in backward: each view's gradient is a
    # zero-filled tensor of the whole stack, accumulated; kept as its own
    # variant because an earlier run of this script timed only that one.)
    w1s = [w1[e].detach().clone().requires_grad_() for e in range(local)]
    w2s = [w2[e].detach().clone().requires_grad_() for e in range(local)]

    def loop_over(up_w, down_w):
        def run():
            outs = []
            for e, xe in enumerate(torch.split(x_in, splits)):
                a = xe @ up_w[e].t()
                gate, up = a.chunk(2, dim=-1)
                outs.append((F.silu(gate) * up) @ down_w[e].t())
            torch.cat(outs).backward(g_out)
        return run
    experts_loop = loop_over(w1s, w2s)
    experts_loop_views = loop_over(w1, w2)

    def experts_grouped():
        a = torch._grouped_mm(x_in, w1.transpose(-2, -1), offs=offs)
        gate, up = a.chunk(2, dim=-1)
        out = torch._grouped_mm((F.silu(gate) * up).contiguous(), w2.transpose(-2, -1), offs=offs)
        out.backward(g_out)

    def experts_one_gemm():
        a = x_in @ w1[0].t()
        gate, up = a.chunk(2, dim=-1)
        ((F.silu(gate) * up) @ w2[0].t()).backward(g_out)

    variants = [("router", router), ("permute+unpermute", permute_unpermute),
                (f"experts: loop of {local} GEMM pairs", experts_loop),
                (f"experts: loop of {local} GEMM pairs over views of one stacked weight", experts_loop_views),
                ("experts: one GEMM pair of all rows", experts_one_gemm)]
    if hasattr(torch, "_grouped_mm"):
        variants.append(("experts: torch._grouped_mm", experts_grouped))

    def layer():
        router()
        permute_unpermute()
        experts_loop()
    variants.append(("layer: router + permute + loop experts", layer))

    flops = 2.0 * m_total * h * 3 * f * 3  # fc1 (2f) + fc2 (f), forward + 2x backward
    rows = {}
    from torch.profiler import ProfilerActivity, profile as prof
    # Eager times and kernel counts of every variant first, CUDA graph
    # timings after: a capture that fails can leave the context unusable,
    # and then it costs only the graph column.
    for name, fn in variants:
        for p in [x_tok, w_router, w1, w2, x_in, *w1s, *w2s]:
            p.grad = None
        try:
            eager, _ = bench(fn, min_ms=200, max_iters=50)
            torch.cuda.synchronize()
            with prof(activities=[ProfilerActivity.CUDA]) as pr:
                fn()
                torch.cuda.synchronize()
            kernels = sum(1 for e in pr.events() if e.device_type == torch.autograd.DeviceType.CUDA)
            rows[name] = dict(shape=label, variant=name, eager_ms=eager, gpu_ms="", gpu_timing="", kernels=kernels,
                              host_us_per_kernel_if_host_bound="", expert_tflops="",
                              rows_per_expert=rows_per_expert, max_rows_per_expert=max(splits),
                              local_experts=local, hidden=h, ffn=f, tokens=c["tokens"], top_k=c["top_k"],
                              experts=c["experts"], ep=c["ep"], skew=skew)
            log(rows[name])
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            rows[name] = dict(shape=label, variant=name, eager_ms="failed")
    for name, fn in variants:
        r = rows[name]
        if r.get("eager_ms") == "failed":
            continue
        try:
            gpu, _, how = bench_graph(fn, reps=2)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            gpu, how = float("nan"), f"no graph: {type(e).__name__}"
        r["gpu_ms"], r["gpu_timing"] = gpu, how
        if gpu == gpu:
            r["host_us_per_kernel_if_host_bound"] = (r["eager_ms"] - gpu) * 1e3 / max(r["kernels"], 1)
            if name.startswith("experts"):
                r["expert_tflops"] = flops / gpu / 1e9
        log(r)
    return list(rows.values())


if __name__ == "__main__":
    t0 = time.time()
    ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")), None)
    for name, f in [("env", env), ("launch", launch), ("moe", moe), ("train", train), ("accum", accum),
                    ("attention", attention), ("memory", memory), ("gemm", gemm)]:
        if ONLY is None or name in ONLY:
            f()
    log(f"all done in {time.time() - t0:.1f} s")
