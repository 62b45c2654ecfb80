#!/usr/bin/env python3
"""gridsample's Python package against torch.nn.functional.grid_sample, in one process.

For each of issue 3's random-grid cases of the suite (bench/gridsample_bench.cpp, `--gs_list`) it
times, with the same thread count for both sides and in turns:
    fwd      gridsample.grid_sample(x, grid)               vs F.grid_sample(x, grid)
    fwd+bwd  the same through autograd: out = f(x, grid); out.backward(go), with x and grid
             requiring gradients (one backward call computing both)
and the C API alone for the same buffers (the extension runs the aclnn calls in a loop, same
process, no Python in between), so that the Python layer's cost is measured, not guessed:
    ovh fwd  = gridsample fwd / C API fwd - 1
    ovh f+b  = gridsample fwd+bwd / (C API fwd + C API bwd) - 1
each the median over --pairs back-to-back pairs (one C API call, then one Python call), so that
load from other work hits both sides alike; the fwd+bwd figure also contains autograd's own work
(allocating the output and the gradients, the graph), which the C API loop, reusing its
buffers, does not do.
Last, the overhead per call in microseconds on a tiny tensor (1x1x2x2, 2x2 grid).

Usage (set OMP_NUM_THREADS explicitly; both libraries then use that many threads):
    OMP_NUM_THREADS=2 python bench/python_bench.py [--min-time 0.3] [--repetitions 5]
        [--filter REGEX] [--skip-torch]
Each figure is the median over rounds of the mean time per call within a round (at least one
call and at least --min-time seconds); each round times all the variants of a case in turn.
"""
import argparse
import os
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import gridsample
from gridsample import _ext

# Issue 3's cases of the suite (their problem strings: bench/gridsample_bench --gs_list):
# name: (dims, N, C, input size, output size, mode, padding, align_corners, dtype, channel_last)
CASES = {
    "3d_bilinear_c16_64": (3, 1, 16, 64, 64, 0, 0, False, "f32", False),
    "3d_bilinear_c1_128": (3, 1, 1, 128, 128, 0, 1, True, "f32", False),
    "3d_bilinear_c32_32_cl": (3, 2, 32, 32, 32, 0, 2, False, "f32", True),
    "3d_nearest_c16_64": (3, 1, 16, 64, 64, 1, 0, False, "f32", False),
    "3d_bilinear_c16_64_f64": (3, 1, 16, 64, 64, 0, 0, False, "f64", False),
    "3d_bilinear_c16_64_bf16": (3, 1, 16, 64, 64, 0, 0, False, "bf16", False),
    "2d_bilinear_c64_128": (2, 8, 64, 128, 128, 0, 0, False, "f32", False),
    "2d_bicubic_c16_256": (2, 2, 16, 256, 256, 2, 1, True, "f32", False),
    "2d_bilinear_c3_512_f16": (2, 4, 3, 512, 512, 0, 0, False, "f16", False),
}
DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16,
          "f16": torch.float16}
MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def inputs(case, seed=0):
    nd, n, c, s_in, s_out, _, _, _, dt, cl = case
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dt]
    x = torch.randn((n, c) + (s_in,) * nd, generator=g).to(dtype)
    grid = (torch.rand((n,) + (s_out,) * nd + (nd,), generator=g) * 2.2 - 1.1).to(dtype)
    go = torch.randn((n, c) + (s_out,) * nd, generator=g).to(dtype)
    if cl:
        fmt = torch.channels_last_3d if nd == 3 else torch.channels_last
        x = x.contiguous(memory_format=fmt)
    return x, grid, go


def mean_time(fn, min_time):
    """Mean seconds per call over at least one call and at least min_time seconds."""
    calls, t0 = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / calls


def c_mean_time(fn_reps, min_time):
    """The same for the extension's in-C loop: fn_reps(k) runs k calls and returns seconds."""
    one = fn_reps(1)
    k = max(1, int(min_time / max(one, 1e-9)))
    return fn_reps(k) / k


def rounds(timers, min_time, repetitions):
    """{name: median seconds per call}: each round times every timer once, in turn, so that all
    sides of a ratio see the same minute of a shared machine."""
    for kind, fn in timers.values():
        fn(1) if kind == "c" else fn()  # warm up (allocations, thread pools)
    samples = {name: [] for name in timers}
    for _ in range(repetitions):
        for name, (kind, fn) in timers.items():
            samples[name].append(c_mean_time(fn, min_time) if kind == "c"
                                 else mean_time(fn, min_time))
    return {name: statistics.median(v) for name, v in samples.items()}


def paired_overhead(c_fn, py_fn, pairs):
    """Median over `pairs` back-to-back pairs of (Python call - C API call): the Python layer's
    cost, measured so that load from other work on a shared machine hits both sides alike.
    c_fn() returns the C API's seconds (timed inside the extension); py_fn() is timed here."""
    diffs, rel = [], []
    for _ in range(pairs):
        c = c_fn()
        t0 = time.perf_counter()
        py_fn()
        py = time.perf_counter() - t0
        diffs.append(py - c)
        rel.append(py / c - 1)
    return statistics.median(diffs), statistics.median(rel)


def fmt_time(s):
    if s is None:
        return "n/a"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def bench_case(name, case, args, threads):
    nd, n, c, s_in, s_out, mode, pad, ac, dt, cl = case
    x, grid, go = inputs(case)
    m, p = MODES[mode], PADDINGS[pad]
    out = gridsample.grid_sample(x, grid, m, p, ac)
    ig, gg = torch.empty_like(x), torch.empty_like(grid)

    def c_fwd(k):
        return _ext.forward(x, grid, out, mode, pad, ac, False, threads, k)

    def c_bwd(k):
        return _ext.backward(go, x, grid, ig, gg, mode, pad, ac, False, threads, k)

    xr, gr = x.detach().requires_grad_(), grid.detach().requires_grad_()

    def gs_fwd():
        gridsample.grid_sample(x, grid, m, p, ac)

    def gs_fb():
        xr.grad = gr.grad = None
        gridsample.grid_sample(xr, gr, m, p, ac).backward(go)

    def th_fwd():
        F.grid_sample(x, grid, m, p, ac)

    def th_fb():
        xr.grad = gr.grad = None
        F.grid_sample(xr, gr, m, p, ac).backward(go)

    torch_ok = not args.skip_torch and (nd == 2 or mode != 2)  # torch has no 3D bicubic
    # torch 2.x's 16-bit 2D CPU kernels return garbage at this size and its backward aborts the
    # process (munmap_chunk(): invalid pointer; seen here with torch 2.15, issue 13): not timed.
    torch_ok = torch_ok and not (nd == 2 and dt in ("f16", "bf16"))
    if torch_ok:
        try:
            th_fwd()
        except RuntimeError:  # e.g. torch 1.13 has no 16-bit CPU kernels
            torch_ok = False
    timers = {"c_fwd": ("c", c_fwd), "gs_fwd": ("py", gs_fwd), "c_bwd": ("c", c_bwd),
              "gs_fb": ("py", gs_fb)}
    if torch_ok:
        timers.update({"th_fwd": ("py", th_fwd), "th_fb": ("py", th_fb)})
    r = dict(th_fwd=None, th_fb=None)
    r.update(rounds(timers, args.min_time, args.repetitions))
    r["ovh_fwd"] = paired_overhead(lambda: c_fwd(1), gs_fwd, args.pairs)
    r["ovh_fb"] = paired_overhead(lambda: c_fwd(1) + c_bwd(1), gs_fb, args.pairs)
    return r


def tiny_overhead(args, threads):
    x = torch.randn(1, 1, 2, 2)
    grid = torch.rand(1, 2, 2, 2) * 2 - 1
    out = torch.empty(1, 1, 2, 2)
    xr = x.clone().requires_grad_()
    go = torch.ones(1, 1, 2, 2)

    def fb():
        xr.grad = None
        gridsample.grid_sample(xr, grid, "bilinear", "zeros", False).backward(go)

    def fbt():
        xr.grad = None
        F.grid_sample(xr, grid, "bilinear", "zeros", False).backward(go)

    r = rounds({
        "c": ("c", lambda k: _ext.forward(x, grid, out, 0, 0, False, False, threads, k)),
        "py": ("py", lambda: gridsample.grid_sample(x, grid, "bilinear", "zeros", False)),
        "th": ("py", lambda: F.grid_sample(x, grid, "bilinear", "zeros", False)),
        "fb": ("py", fb), "fbt": ("py", fbt)}, args.min_time, args.repetitions)
    return r["c"], r["py"], r["th"], r["fb"], r["fbt"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--filter", default="")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--pairs", type=int, default=21,
                    help="back-to-back (C API, Python) pairs for the overhead columns")
    args = ap.parse_args()
    if "OMP_NUM_THREADS" not in os.environ:
        sys.exit("set OMP_NUM_THREADS explicitly (e.g. OMP_NUM_THREADS=2), so that both "
                 "libraries use the same thread count")
    threads = int(os.environ["OMP_NUM_THREADS"])
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, gridsample {gridsample.__version__}, {threads} threads "
          f"(OMP_NUM_THREADS), {os.cpu_count()} cores; min-time {args.min_time} s, median of "
          f"{args.repetitions}")
    head = (f"{'case':28} {'C API fwd':>10} {'gs fwd':>10} {'torch fwd':>10} {'x':>6} "
            f"{'ovh fwd':>8} | {'C API f+b':>10} {'gs f+b':>10} {'torch f+b':>10} {'x':>6} "
            f"{'ovh f+b':>8}")
    print(head)
    print("-" * len(head))
    worst = 0.0
    for name, case in CASES.items():
        if args.filter and not re.search(args.filter, name):
            continue
        r = bench_case(name, case, args, threads)
        ovh_f = r["ovh_fwd"][1]
        c_fb = r["c_fwd"] + r["c_bwd"]
        ovh_fb = r["ovh_fb"][1]
        worst = max(worst, ovh_f)
        sp_f = f"{r['th_fwd'] / r['gs_fwd']:.1f}" if r["th_fwd"] else "n/a"
        sp_fb = f"{r['th_fb'] / r['gs_fb']:.1f}" if r["th_fb"] else "n/a"
        print(f"{name:28} {fmt_time(r['c_fwd']):>10} {fmt_time(r['gs_fwd']):>10} "
              f"{fmt_time(r['th_fwd']):>10} {sp_f:>6} {ovh_f * 100:7.1f}% | "
              f"{fmt_time(c_fb):>10} {fmt_time(r['gs_fb']):>10} {fmt_time(r['th_fb']):>10} "
              f"{sp_fb:>6} {ovh_fb * 100:7.1f}%", flush=True)
    c, py, th, fb, fbt = tiny_overhead(args, threads)
    print(f"\ntiny (1x1x2x2 input, 2x2 grid): C API fwd {c * 1e6:.2f} us, gridsample.grid_sample "
          f"{py * 1e6:.2f} us (overhead {(py - c) * 1e6:.2f} us), F.grid_sample {th * 1e6:.2f} us; "
          f"fwd+bwd through autograd: gridsample {fb * 1e6:.1f} us, torch {fbt * 1e6:.1f} us")
    print(f"targets: overhead over the C API <= 10% on the cases (worst fwd: {worst * 100:.1f}%), "
          f"< 20 us per call on a tiny tensor ({(py - c) * 1e6:.2f} us)")


if __name__ == "__main__":
    main()
