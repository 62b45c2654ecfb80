#!/usr/bin/python3
"""Issue 3's benchmark table: gridsample (bench/gridsample_bench) against Debian's PyTorch.

Times, in one sitting, every case of the suite through our Google Benchmark program and through
PyTorch's aten kernels with the same thread count, case by case and in turns: each of R rounds
runs our program once for the case (one repetition of --min-time; a 16-bit case's FLOAT twin
too) and then PyTorch's kernels once per direction, so that both sides of a ratio are timed in the
same minute of a shared machine. It prints per case and direction: our median, PyTorch's median,
the speed-up (the ratio of the medians), the bytes the operator must move (read gradOutput/input/
grid once, write inputGrad/gridGrad or out once), the time those bytes take at the machine's copy
bandwidth (the benchmark program's memory/copy case, bytes read + written per second, median of R)
and our time as a multiple of that floor. Then it checks the issue's targets.

Usage: /usr/bin/python3 tools/bench_vs_torch.py [--bench build/bench/bench/gridsample_bench]
           [--threads 2] [--repetitions 5] [--min-time 0.5] [--filter REGEX]
Run it on a quiet machine if you can: the turns put load from other work on both sides, but
medians of few rounds still move with it.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import torch

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
# The FLOAT case with the same shape as each 16-bit case (in the suite or registered as extra/).
FLOAT_TWIN = {
    "3d_bilinear_c16_64_bf16": "suite/3d_bilinear_c16_64",
    "2d_bilinear_c3_512_f16": "extra/2d_bilinear_c3_512_f32",
}
DTYPES = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16,
          "f16": torch.float16}


def run_ours(bench, threads, min_time, flt):
    """One run of the benchmarks matching flt: {name: seconds}, {name: bytes per second}."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.pop("GRIDSAMPLE_IMPL", None)
    cmd = [bench, "--benchmark_format=json", f"--benchmark_min_time={min_time}",
           f"--benchmark_filter={flt}"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    times, rates = {}, {}
    for b in json.loads(out)["benchmarks"]:
        name = b["run_name"].replace("/real_time", "")
        times[name] = b["real_time"] / 1e3  # ms -> s
        rates[name] = b.get("bytes_per_second")
    return times, rates


def torch_inputs(case, seed=20240601):
    nd, n, c, s_in, s_out, mode, pad, ac, dt, cl = case
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dt]
    x = torch.randn((n, c) + (s_in,) * nd, generator=g).to(dtype)
    grid = (torch.rand((n,) + (s_out,) * nd + (nd,), generator=g) * 2.2 - 1.1).to(dtype)
    go = torch.randn((n, c) + (s_out,) * nd, generator=g).to(dtype)
    if cl:
        fmt = torch.channels_last_3d if nd == 3 else torch.channels_last
        x, go = x.contiguous(memory_format=fmt), go.contiguous(memory_format=fmt)
    return x, grid, go


def torch_call(case, backward):
    """A function that runs PyTorch's kernel on the case's inputs once, or None and why not."""
    nd, _, _, _, _, mode, pad, ac, _, _ = case
    x, grid, go = torch_inputs(case)
    if backward:
        op = torch.ops.aten.grid_sampler_3d_backward if nd == 3 else \
            torch.ops.aten.grid_sampler_2d_backward
        fn = lambda: op(go, x, grid, mode, pad, ac, [True, True])  # noqa: E731
    else:
        op = torch.grid_sampler_3d if nd == 3 else torch.grid_sampler_2d
        fn = lambda: op(x, grid, mode, pad, ac)  # noqa: E731
    try:
        fn()  # warm-up, and the check that this dtype is implemented
    except RuntimeError as e:
        return None, str(e).splitlines()[0]
    return fn, None


def seconds(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(root, "build/bench/bench/gridsample_bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--filter", default=".*", help="regex over case names")
    args = ap.parse_args()

    names = [k for k in CASES if re.search(args.filter, k)]
    torch.set_num_threads(args.threads)
    median = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    copy_rates = [run_ours(args.bench, args.threads, args.min_time, "^memory/copy/")[1]
                  ["memory/copy"] for _ in range(args.repetitions)]
    copy_bw = median([r for r in copy_rates if r])

    rows, notes = [], []
    for name in names:
        twin = FLOAT_TWIN.get(name)
        flt = f"^(suite/{name}/" + (f"|{twin}/" if twin else "") + ")"
        calls = {d: torch_call(CASES[name], d == "bwd") for d in ("fwd", "bwd")}
        ours, theirs, moved = {}, {"fwd": [], "bwd": []}, {}
        for _ in range(args.repetitions):  # in turns (see the module's doc)
            times, r = run_ours(args.bench, args.threads, args.min_time, flt)
            for k, v in times.items():
                ours.setdefault(k, []).append(v)
                if r.get(k):
                    moved[k] = r[k] * v  # the case's bytes (the same in every run)
            for d, (fn, _) in calls.items():
                if fn:
                    theirs[d].append(seconds(fn))
        for direction in ("fwd", "bwd"):
            key = f"suite/{name}/{direction}"
            mine = median(ours.get(key))
            if calls[direction][1]:
                notes.append(f"{key}: PyTorch: {calls[direction][1]}")
            nbytes = moved.get(key)
            floor = nbytes / copy_bw if nbytes and copy_bw else None
            flt_twin = median(ours.get(f"{twin}/{direction}")) if twin else None
            rows.append((name, direction, mine, median(theirs[direction]), nbytes, floor,
                         flt_twin))

    print(f"threads: {args.threads}, rounds: {args.repetitions} (medians), torch "
          f"{torch.__version__}, copy bandwidth {copy_bw / 1e9:.2f} GB/s (read + write)"
          if copy_bw else "copy bandwidth: not measured")
    hdr = (f"{'case':26} {'dir':3} {'ours ms':>9} {'torch ms':>9} {'speed-up':>8} "
           f"{'MB moved':>8} {'floor ms':>8} {'x floor':>7} {'x f32':>6}")
    print(hdr)
    print("-" * len(hdr))
    fmt = lambda v, f: (f"{v:{f}}" if v is not None else "n/a")  # noqa: E731
    for name, d, mine, theirs, nbytes, floor, twin in rows:
        ratio = theirs / mine if mine and theirs else None
        print(f"{name:26} {d:3} {fmt(mine and mine * 1e3, '9.2f'):>9} "
              f"{fmt(theirs and theirs * 1e3, '9.2f'):>9} {fmt(ratio, '8.1f'):>8} "
              f"{fmt(nbytes and nbytes / 1e6, '8.1f'):>8} {fmt(floor and floor * 1e3, '8.2f'):>8} "
              f"{fmt(mine / floor if mine and floor else None, '7.1f'):>7} "
              f"{fmt(mine / twin if mine and twin else None, '6.2f'):>6}")
    for n in notes:
        print("note:", n)

    # Issue 3's targets.
    print("\ntargets:")
    ok_all = True

    def check(label, value, goal, higher_is_better=True):
        nonlocal ok_all
        if value is None:
            print(f"  {label}: n/a")
            return
        ok = value >= goal if higher_is_better else value <= goal
        ok_all &= ok
        print(f"  {label}: {value:.2f} (target {'>=' if higher_is_better else '<='} {goal}) "
              f"{'met' if ok else 'MISSED'}")

    for name, d, mine, theirs, nbytes, floor, twin in rows:
        nd, mode, dt, cl = CASES[name][0], CASES[name][5], CASES[name][8], CASES[name][9]
        ratio = theirs / mine if mine and theirs else None
        if d == "bwd" and nd == 3 and mode == 0:
            check(f"{name} bwd speed-up", ratio, 20)
        if d == "bwd" and nd == 3 and mode == 1:
            check(f"{name} bwd speed-up", ratio, 5)
        if d == "bwd" and nd == 2 and mode in (0, 2):
            check(f"{name} bwd speed-up", ratio, 4)
        if d == "fwd":
            check(f"{name} fwd speed-up", ratio, 5 if nd == 3 else 2)
        if dt in ("bf16", "f16"):
            check(f"{name} {d} time / FLOAT time", mine / twin if mine and twin else None, 1.3,
                  higher_is_better=False)
        if cl and nd == 3 and mode == 0 and d == "bwd":
            check(f"{name} bwd time / memory floor", mine / floor if mine and floor else None, 4,
                  higher_is_better=False)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
