#!/usr/bin/env python3
"""Reference measurements of one NVIDIA GPU for trainscope's time model.

Run on a machine with a CUDA GPU and PyTorch (nothing in trainscope's build
or tests needs one). Writes into the folder given as the first argument:

  env.json         GPU, driver, PyTorch and CUDA versions, clocks
  gemm.csv         dense GEMM throughput by shape, layout and precision
  attention.csv    fused attention (SDPA) forward and forward+backward
  memory.csv       bandwidth-bound kernels (copy, add, RMSNorm, SwiGLU,
                   softmax, cross-entropy) by size
  train.csv        whole training steps of Llama-shaped models built from a
                   config.json with HuggingFace transformers (time, memory)
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


if __name__ == "__main__":
    t0 = time.time()
    ONLY = next((a.split("=", 1)[1].split(",") for a in sys.argv if a.startswith("--only=")), None)
    for name, f in [("env", env), ("train", train), ("attention", attention),
                    ("memory", memory), ("gemm", gemm)]:
        if ONLY is None or name in ONLY:
            f()
    log(f"all done in {time.time() - t0:.1f} s")
