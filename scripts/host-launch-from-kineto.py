#!/usr/bin/env python3
"""Host launch costs, GPU idle and sync points, per training step, from
PyTorch profiler (Kineto) Chrome traces.

    python3 scripts/host-launch-from-kineto.py TRACE.json[.gz]... \
        [--out OUT.csv] [--train train.csv --train-out RATIOS.csv] \
        [--layers N,N,...]

One row per trace and ProfilerStep. Definitions (all times in microseconds,
as the trace writes them):

* A step is the host annotation `ProfilerStep#N` (cat user_annotation). The
  GPU work of a step is every kernel / memcpy / memset whose launch call
  (joined by `args.correlation`) starts inside that annotation; the GPU
  `ProfilerStep` mark of PyTorch 2.11 is a 1 us point and is not used.
* Launch calls: cat cuda_runtime / cuda_driver named cudaLaunchKernel,
  cudaLaunchKernelExC, cuLaunchKernel, cuLaunchKernelEx,
  cudaLaunchCooperativeKernel, cudaGraphLaunch (kernel launches) plus
  cudaMemcpyAsync / cudaMemsetAsync (copy launches). The duration
  distribution is over the kernel launches; `launch_blocked_us` is the time
  the host spent in launch calls longer than 100 us (the launch queue was
  full: Kineto writes "Command Buffer Full" overhead events for them).
* host_us_per_kernel = cpu_step_us / kernels (the host's wall time per
  launched kernel, whatever it was doing); host_active_us_per_kernel removes
  the time blocked in syncs and in full-queue launch calls.
* Launch gaps: start-to-start intervals between consecutive launch calls of
  one host thread inside the step (forward and optimizer run on the main
  thread, backward on the autograd thread); medians per thread and pooled.
* gpu_busy_us: union of the step's kernel, memcpy and memset intervals
  (kernel_busy_us: kernels alone). gpu_span_us: first start to last end of
  the step's GPU work. step_us: last end of this step's GPU work minus the
  last end of the GPU work before it (the previous step's, or for the first
  recorded step the warm-up step's tail that the trace holds): the period a
  timed loop sees.
* host_bound_us: sum of the GPU's idle gaps (between the end of the work so
  far and the next operation's start, the gap before the step's first
  operation included) where that next operation's launch call ended after
  the GPU had run out of work: the GPU waited for the host.
  host_bound_after_launch_us is the part of those gaps after the launch
  call returned (launch latency); median_idle_launch_latency_us is the
  median of (kernel start - launch call end) for those launches.
* Sync points: runtime calls that block the host until the device reaches a
  point (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
  synchronous cudaMemcpy, their driver forms); `syncs` counts them,
  `sync_blocked_us` sums their durations; `item_calls` counts aten::item /
  aten::_local_scalar_dense (their blocking is inside those runtime calls).
* Per region: kernels launched inside the main thread's forward annotation
  (`*.forward` / `nn.Module` at top level), the optimizer step
  (`Optimizer.step*`), zero_grad (`Optimizer.zero_grad*`), on other host
  threads (the autograd engine: backward) and the rest.
* Per layer (if the attention kernels can be found): the median number of
  kernels between consecutive attention forward kernels (the forward of one
  decoder layer) and between consecutive attention backward kernels, and the
  median host interval and GPU interval between them.
* --layer-listing writes the GPU work of one such forward and backward
  layer period (step 2, fifth to sixth attention kernel) with the host op
  that launched each operation.

Python 3 standard library only. Prints a short summary per step.
"""
import argparse
import bisect
import csv
import gzip
import json
import os
import re
import statistics
import sys

KERNEL_LAUNCH = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchKernelExC_v11060", "cuLaunchKernel",
                 "cuLaunchKernelEx", "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch"}
COPY_LAUNCH = {"cudaMemcpyAsync", "cudaMemsetAsync", "cuMemcpyAsync", "cuMemsetD8Async", "cuMemsetD32Async"}
SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cudaMemcpy2D", "cudaMemset", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
              "cuMemcpyDtoH", "cuMemcpy"}
ITEM_OPS = {"aten::item", "aten::_local_scalar_dense"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
BLOCKED_LAUNCH_US = 100.0
ATTN_FWD = re.compile(r"sdpa.*fprop|flash_fwd|fmha_fwd|flash_attn.*fwd|fmha.*forward|attention.*fwd", re.I)
ATTN_BWD = re.compile(r"sdpa.*bprop|flash_bwd|fmha_bwd|flash_attn.*bwd|fmha.*backward|attention.*bwd", re.I)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def pct(xs, q):
    """q-th percentile (0..100) by linear interpolation; None on empty."""
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def union_length(intervals):
    total = 0.0
    end = None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def median_or_none(xs):
    return statistics.median(xs) if xs else None


def r(x, nd=3):
    return "" if x is None else round(x, nd)


def short_kernel(name):
    """A kernel name without its template and argument lists."""
    n = str(name)
    m = re.search(r"at::native::(?:\(anonymous namespace\)::)?([A-Za-z_0-9]+(?:<[^<>]*>)?)", n)
    for key in ("bfloat16_copy", "direct_copy", "MulFunctor", "CUDAFunctor_add", "CUDAFunctorOnSelf_add",
                "pow_tensor_scalar", "rsqrt", "neg_kernel", "silu_backward", "silu_kernel", "FillFunctor",
                "sum_functor", "MeanOps", "CatArrayBatchedCopy", "DivFunctor", "div_true"):
        if key in n:
            return key
    if m and n.startswith("void"):
        return m.group(1)[:40]
    return re.sub(r"\(.*", "", n)[:60]


def layer_listing(path, step_no=2, which=4):
    """The GPU work of one forward and one backward decoder-layer period (from
    the `which`-th attention kernel to the next) of ProfilerStep#step_no,
    with the host op that launched each: rows for a TSV."""
    trace = load(path)
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    st = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == f"ProfilerStep#{step_no}"][0]
    rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
          and "correlation" in e.get("args", {})}
    by_tid = {}
    for c in ev:
        if c.get("cat") == "cpu_op":
            by_tid.setdefault(c["tid"], []).append(c)
    ops = [g for g in ev if g.get("cat") in GPU_CATS and g.get("args", {}).get("correlation") in rt
           and st["ts"] <= rt[g["args"]["correlation"]]["ts"] < st["ts"] + st["dur"]]
    ops.sort(key=lambda g: g["ts"])
    kern = [g for g in ops if g["cat"] == "kernel"]
    out = []
    for tag, rx in (("fwd", ATTN_FWD), ("bwd", ATTN_BWD)):
        marks = [g for g in kern if rx.search(g["name"])]
        if len(marks) <= which + 1:
            continue
        a, b = marks[which]["ts"], marks[which + 1]["ts"]
        for i, g in enumerate(x for x in ops if a <= x["ts"] < b):
            call = rt[g["args"]["correlation"]]
            stack = sorted((c for c in by_tid.get(call["tid"], []) if c["ts"] <= call["ts"] <= c["ts"] + c["dur"]),
                           key=lambda c: c["ts"])
            names = [c["name"] for c in stack if not c["name"].startswith("autograd::engine")]
            out.append({"trace": os.path.basename(path), "pass": tag, "position": i, "gpu_op": g["cat"],
                        "dur_us": round(g["dur"], 1), "host_op": " > ".join(names[:3]),
                        "kernel": short_kernel(g["name"]) if g["cat"] == "kernel" else g["name"]})
    return out


def analyse(path, layers=None):
    trace = load(path)
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    if not steps:
        sys.exit(f"{path}: no ProfilerStep annotations")
    main_tid = steps[0]["tid"]
    runtime = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    by_corr = {}
    for e in runtime:
        c = e.get("args", {}).get("correlation")
        if c is not None:
            by_corr[c] = e
    gpu = sorted((e for e in ev if e.get("cat") in GPU_CATS), key=lambda e: e["ts"])
    overhead = [e for e in ev if e.get("cat") == "overhead"]
    cpu_ops = [e for e in ev if e.get("cat") in ("cpu_op", "user_annotation") and e.get("tid") == main_tid]
    fwd_regions = [e for e in cpu_ops if re.search(r"\.forward$|^nn\.Module", str(e["name"]))]
    opt_regions = [e for e in cpu_ops if str(e["name"]).startswith("Optimizer.step")]
    zero_regions = [e for e in cpu_ops if str(e["name"]).startswith("Optimizer.zero_grad")]
    items = [e for e in ev if e.get("cat") == "cpu_op" and e.get("name") in ITEM_OPS]

    def inside(t, regions):
        return any(g["ts"] <= t <= g["ts"] + g["dur"] for g in regions)

    rows = []
    prev_end = None
    # GPU work that precedes the first recorded step (the warm-up step's tail).
    first_step_start = steps[0]["ts"]
    pre = [g for g in gpu if (by_corr.get(g.get("args", {}).get("correlation")) or {"ts": -1})["ts"] < first_step_start]
    if pre:
        prev_end = max(g["ts"] + g["dur"] for g in pre)
    for st in steps:
        t0, t1 = st["ts"], st["ts"] + st["dur"]
        in_step = lambda e: t0 <= e["ts"] < t1  # noqa: E731
        launches = [e for e in runtime if e["name"] in KERNEL_LAUNCH and in_step(e)]
        copies = [e for e in runtime if e["name"] in COPY_LAUNCH and in_step(e)]
        syncs = [e for e in runtime if e["name"] in SYNC_CALLS and in_step(e)]
        work = []  # (gpu event, launch call)
        for g in gpu:
            call = by_corr.get(g.get("args", {}).get("correlation"))
            if call is not None and in_step(call):
                work.append((g, call))
        work.sort(key=lambda w: w[0]["ts"])
        kernels = [w for w in work if w[0]["cat"] == "kernel"]
        memcpy = sum(1 for w in work if w[0]["cat"] == "gpu_memcpy")
        memset = sum(1 for w in work if w[0]["cat"] == "gpu_memset")
        # launch call durations
        ld = [e["dur"] for e in launches]
        blocked = [e for e in launches + copies if e["dur"] > BLOCKED_LAUNCH_US]
        launch_blocked = sum(e["dur"] for e in blocked)
        cbf = sum(max(0.0, min(o["ts"] + o["dur"], t1) - max(o["ts"], t0)) for o in overhead
                  if o.get("name") == "Command Buffer Full")
        sync_blocked = sum(e["dur"] for e in syncs)
        # launch gaps per host thread (start to start), kernel and copy launches together
        gaps = {}
        for tid in sorted({e["tid"] for e in launches + copies}, key=str):
            ts = sorted(e["ts"] for e in launches + copies if e["tid"] == tid)
            gaps[tid] = [b - a for a, b in zip(ts, ts[1:])]
        pooled = [x for v in gaps.values() for x in v]
        other_threads = [x for tid, v in gaps.items() if tid != main_tid for x in v]
        # GPU busy, span, host-bound gaps
        busy = union_length([(g["ts"], g["ts"] + g["dur"]) for g, _ in work])
        kbusy = union_length([(g["ts"], g["ts"] + g["dur"]) for g, _ in kernels])
        first = work[0][0]["ts"] if work else None
        last = max((g["ts"] + g["dur"] for g, _ in work), default=None)
        end_so_far = prev_end
        host_bound = 0.0
        host_bound_after = 0.0
        host_bound_gaps = 0
        idle_total = 0.0
        idle_latency = []
        for g, call in work:
            if end_so_far is not None and g["ts"] > end_so_far:
                gap = g["ts"] - end_so_far
                idle_total += gap
                call_end = call["ts"] + call["dur"]
                if call_end > end_so_far:
                    host_bound += gap
                    host_bound_gaps += 1
                    host_bound_after += min(gap, g["ts"] - call_end) if g["ts"] > call_end else 0.0
                    idle_latency.append(g["ts"] - call_end)
            e = g["ts"] + g["dur"]
            end_so_far = e if end_so_far is None else max(end_so_far, e)
        step_period = (last - prev_end) if (last is not None and prev_end is not None) else None
        prev_end = last if last is not None else prev_end
        # regions
        reg = {"fwd": 0, "bwd": 0, "opt": 0, "zero_grad": 0, "other": 0}
        for g, call in kernels:
            if call["tid"] != main_tid:
                reg["bwd"] += 1
            elif inside(call["ts"], opt_regions):
                reg["opt"] += 1
            elif inside(call["ts"], zero_regions):
                reg["zero_grad"] += 1
            elif inside(call["ts"], fwd_regions):
                reg["fwd"] += 1
            else:
                reg["other"] += 1
        # per layer, from the attention kernels
        per_layer = {}
        for tag, rx in (("fwd", ATTN_FWD), ("bwd", ATTN_BWD)):
            idx = [i for i, (g, _) in enumerate(kernels) if rx.search(g["name"])]
            counts = [b - a for a, b in zip(idx, idx[1:])]
            host_iv = [kernels[b][1]["ts"] - kernels[a][1]["ts"] for a, b in zip(idx, idx[1:])]
            gpu_iv = [kernels[b][0]["ts"] - kernels[a][0]["ts"] for a, b in zip(idx, idx[1:])]
            per_layer[tag] = (len(idx), median_or_none(counts), median_or_none(host_iv), median_or_none(gpu_iv))
        n_items = sum(1 for e in items if t0 <= e["ts"] < t1)
        nk = len(kernels)
        row = {
            "trace": os.path.basename(path),
            "step": st["name"].split("#", 1)[1],
            "kernels": nk,
            "memcpy": memcpy,
            "memset": memset,
            "kernels_fwd": reg["fwd"],
            "kernels_bwd": reg["bwd"],
            "kernels_optimizer": reg["opt"],
            "kernels_zero_grad": reg["zero_grad"],
            "kernels_other": reg["other"],
            "layers": layers or "",
            "attn_fwd_kernels": per_layer["fwd"][0],
            "attn_bwd_kernels": per_layer["bwd"][0],
            "kernels_per_layer_fwd": r(per_layer["fwd"][1], 1),
            "kernels_per_layer_bwd": r(per_layer["bwd"][1], 1),
            "host_us_per_layer_fwd": r(per_layer["fwd"][2], 1),
            "gpu_us_per_layer_fwd": r(per_layer["fwd"][3], 1),
            "host_us_per_layer_bwd": r(per_layer["bwd"][2], 1),
            "gpu_us_per_layer_bwd": r(per_layer["bwd"][3], 1),
            "launch_calls": len(launches) + len(copies),
            "kernel_launch_calls": len(launches),
            "copy_launch_calls": len(copies),
            "launch_calls_main_thread": sum(1 for e in launches + copies if e["tid"] == main_tid),
            "launch_calls_other_threads": sum(1 for e in launches + copies if e["tid"] != main_tid),
            "launch_call_median_us": r(median_or_none(ld)),
            "launch_call_p10_us": r(pct(ld, 10)),
            "launch_call_p90_us": r(pct(ld, 90)),
            "launch_call_mean_us": r(statistics.fmean(ld) if ld else None),
            "launch_call_mean_unblocked_us": r(statistics.fmean([x for x in ld if x <= BLOCKED_LAUNCH_US]) if ld else None),
            "copy_call_median_us": r(median_or_none([e["dur"] for e in copies])),
            "launch_calls_blocked": len(blocked),
            "launch_blocked_us": r(launch_blocked, 1),
            "command_buffer_full_us": r(cbf, 1),
            "cpu_step_us": r(st["dur"], 1),
            "host_us_per_kernel": r(st["dur"] / nk if nk else None),
            "host_active_us_per_kernel": r((st["dur"] - sync_blocked - launch_blocked) / nk if nk else None),
            "median_launch_gap_us": r(median_or_none(pooled)),
            "median_launch_gap_main_us": r(median_or_none(gaps.get(main_tid, []))),
            "median_launch_gap_other_threads_us": r(median_or_none(other_threads)),
            "gpu_busy_us": r(busy, 1),
            "kernel_busy_us": r(kbusy, 1),
            "gpu_span_us": r((last - first) if work else None, 1),
            "step_us": r(step_period, 1),
            "gpu_idle_us": r(idle_total, 1),
            "host_bound_us": r(host_bound, 1),
            "host_bound_gaps": host_bound_gaps,
            "host_bound_after_launch_us": r(host_bound_after, 1),
            "median_idle_launch_latency_us": r(median_or_none(idle_latency)),
            "syncs": len(syncs),
            "sync_blocked_us": r(sync_blocked, 1),
            "sync_max_us": r(max((e["dur"] for e in syncs), default=None), 1),
            "sync_calls": ";".join(sorted({e["name"] for e in syncs})),
            "item_calls": n_items,
        }
        rows.append(row)
    return rows


def train_ratios(path):
    """Eager vs torch.compile step time for each (model, micro_batch, seq)
    that train.csv holds in both forms."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    keyed = {}
    for x in rows:
        if x.get("step_ms") in (None, "", "oom"):
            continue
        keyed[(x["model"], x["micro_batch"], x["seq"], x["compiled"] == "True")] = x
    out = []
    for (model, mb, seq, compiled), x in sorted(keyed.items()):
        if compiled:
            continue
        c = keyed.get((model, mb, seq, True))
        if c is None:
            continue
        e_ms, c_ms = float(x["step_ms"]), float(c["step_ms"])
        out.append({"model": model, "micro_batch": mb, "seq": seq, "eager_step_ms": round(e_ms, 2),
                    "compiled_step_ms": round(c_ms, 2), "eager_over_compiled": round(e_ms / c_ms, 3),
                    "eager_tokens_per_s": round(float(x["tokens_per_s"])),
                    "compiled_tokens_per_s": round(float(c["tokens_per_s"])),
                    "eager_peak_gib": round(int(x["peak_bytes"]) / 2**30, 2),
                    "compiled_peak_gib": round(int(c["peak_bytes"]) / 2**30, 2)})
    return out


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--out", help="CSV to write, one row per trace-step")
    ap.add_argument("--layers", default="", help="decoder layers per trace, comma-separated, for the summary")
    ap.add_argument("--train", help="train.csv with eager and compiled steps")
    ap.add_argument("--train-out", help="CSV for the eager/compiled ratios")
    ap.add_argument("--layer-listing", help="TSV of one forward and one backward layer's GPU work per trace")
    a = ap.parse_args()
    layers = [int(x) for x in a.layers.split(",")] if a.layers else []
    rows = []
    for i, p in enumerate(a.traces):
        rows += analyse(p, layers[i] if i < len(layers) else None)
    for x in rows:
        print(f"{x['trace']} step {x['step']}: {x['kernels']} kernels (fwd {x['kernels_fwd']}, bwd {x['kernels_bwd']}, "
              f"opt {x['kernels_optimizer']}), launch call median {x['launch_call_median_us']} us, "
              f"host {x['host_us_per_kernel']} us/kernel (active {x['host_active_us_per_kernel']}), "
              f"median launch gap {x['median_launch_gap_us']} us, GPU busy {x['gpu_busy_us']} of step {x['step_us']} us, "
              f"host-bound {x['host_bound_us']} us, syncs {x['syncs']} blocking {x['sync_blocked_us']} us")
    if a.out:
        write(a.out, rows)
        print(f"wrote {a.out}: {len(rows)} rows")
    if a.layer_listing:
        lst = [x for p in a.traces for x in layer_listing(p)]
        with open(a.layer_listing, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(lst[0].keys()), delimiter="\t")
            w.writeheader()
            w.writerows(lst)
        print(f"wrote {a.layer_listing}: {len(lst)} rows")
    if a.train:
        tr = train_ratios(a.train)
        for x in tr:
            print(f"{x['model']} mb {x['micro_batch']} seq {x['seq']}: eager {x['eager_step_ms']} ms, "
                  f"compiled {x['compiled_step_ms']} ms, ratio {x['eager_over_compiled']}")
        if a.train_out and tr:
            write(a.train_out, tr)
            print(f"wrote {a.train_out}: {len(tr)} rows")


if __name__ == "__main__":
    main()
