#!/usr/bin/env python3
"""The benchmark table: gridsample (bench/gridsample_bench) against PyTorch, one or two versions.

Times, in one sitting, every case of the suite (`gridsample_bench --gs_list`: names and problem
strings, NOTE [ Bench problem strings ] in bench/gridsample_bench.cpp) through our Google
Benchmark program and through PyTorch's aten kernels with the same thread count, case by case and
in turns: each of R rounds runs our program once for the case (one repetition of --min-time; a
16-bit case's FLOAT twin too) and then each PyTorch once per direction, so that all sides of a
ratio are timed in the same minute of a shared machine. Each PyTorch runs in a worker process of
its own interpreter: Debian's (/usr/bin/python3, torch 1.13) by default, plus any given with
--torch-python (e.g. a virtual environment with the current PyPI torch). The workers build the
same inputs as the benchmark (the same grids: warps and affine grids are closed formulas; random
grids and values are drawn from another generator but with the same distributions).

It prints per case and direction: our median, each PyTorch's median and the speed-up against it
(the ratio of the medians), the bytes the operator must move (read gradOutput/input/grid once,
write inputGrad/gridGrad or out once), the time those bytes take at the machine's copy bandwidth
(memory/copy, bytes read + written per second, median of R), our time as a multiple of that
floor, and a 16-bit case's time against its FLOAT twin. Then it checks issue 12's targets.

Usage: tools/bench_vs_torch.py [--bench build/bench/bench/gridsample_bench] [--threads 2]
           [--repetitions 5] [--min-time 0.5] [--filter REGEX]
           [--torch-python /usr/bin/python3 --torch-python build/venv-torch2/bin/python ...]
"""
import argparse
import json
import math
import os
import re
import select
import statistics
import subprocess
import sys

HERE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------------------------
# The worker: runs inside an interpreter that has torch.

def parse_spec(spec):
    """A problem string (NOTE [ Bench problem strings ]) as a dict."""
    f = spec.split("_")
    dims = lambda t: tuple(int(v) for v in t[1:].split("x"))  # noqa: E731
    n, c = re.fullmatch(r"n(\d+)c(\d+)", f[2]).groups()
    return dict(grid=f[0], nd=int(f[1][0]), N=int(n), C=int(c), inp=dims(f[3]), out=dims(f[4]),
                mode=["bilinear", "nearest", "bicubic"].index(f[5]),
                pad=["zeros", "border", "reflection"].index(f[6]), align=f[7] == "ac1",
                dtype=f[8], cl=f[9] == "cl")


def coherent_grid(torch, k):
    """NOTE [ Bench grids ]: the benchmark's warp and affine grids, in float64."""
    nd, out, inp, align = k["nd"], k["out"], k["inp"], k["align"]
    axes = [torch.arange(s, dtype=torch.float64) for s in out]  # outermost first
    mesh = torch.meshgrid(*axes, indexing="ij")
    idx = [mesh[nd - 1 - a] for a in range(nd)]  # axis order: x first
    th = 2 * math.pi * (idx[0] / out[nd - 1] + 0.5 * idx[1] / out[nd - 2] +
                         (0.25 * idx[2] / out[0] if nd == 3 else 0))
    g = []
    for a in range(nd):
        si, so = inp[nd - 1 - a], out[nd - 1 - a]
        if align:
            u = idx[a] * ((si - 1) / (so - 1)) if so > 1 else idx[a] * 0
        else:
            u = (idx[a] + 0.5) * (si / so) - 0.5
        if k["grid"] == "warp":
            u = u + 3.0 * torch.sin(th * (1.0 + 0.5 * a) + 1.3 * a)
        if align:
            g.append(2.0 * u / (si - 1) - 1.0 if si > 1 else u * 0)
        else:
            g.append((2.0 * u + 1.0) / si - 1.0)
    grids = []
    for n in range(k["N"]):
        h = list(g)
        if k["grid"] == "affine":
            t = 0.15 + 0.05 * n
            c, s = torch.cos(torch.tensor(t, dtype=torch.float64)), \
                torch.sin(torch.tensor(t, dtype=torch.float64))
            h[0], h[1] = c * g[0] - s * g[1], s * g[0] + c * g[1]
            if nd == 3:
                c2 = torch.cos(torch.tensor(t / 2, dtype=torch.float64))
                s2 = torch.sin(torch.tensor(t / 2, dtype=torch.float64))
                h[1], h[2] = c2 * h[1] - s2 * g[2], s2 * h[1] + c2 * g[2]
            h = [1.1 * v + 0.05 for v in h]
        grids.append(torch.stack(h, dim=-1))
    return torch.stack(grids)


def torch_case(torch, spec):
    """Inputs for the problem and a function per direction (or an error string)."""
    k = parse_spec(spec)
    dtype = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16,
             "f16": torch.float16}[k["dtype"]]
    gen = torch.Generator().manual_seed(20240601)
    nd = k["nd"]
    x = torch.randn((k["N"], k["C"]) + k["inp"], generator=gen).to(dtype)
    if k["grid"] == "random":
        grid = torch.rand((k["N"],) + k["out"] + (nd,), generator=gen) * 2.2 - 1.1
    else:
        grid = coherent_grid(torch, k)
    grid = grid.to(dtype).contiguous()
    go = torch.randn((k["N"], k["C"]) + k["out"], generator=gen).to(dtype)
    if k["cl"]:
        fmt = torch.channels_last_3d if nd == 3 else torch.channels_last
        x, go = x.contiguous(memory_format=fmt), go.contiguous(memory_format=fmt)
    mode, pad, ac = k["mode"], k["pad"], k["align"]
    fwd_op = torch.grid_sampler_3d if nd == 3 else torch.grid_sampler_2d
    bwd_op = torch.ops.aten.grid_sampler_3d_backward if nd == 3 else \
        torch.ops.aten.grid_sampler_2d_backward
    fns = {"fwd": lambda: fwd_op(x, grid, mode, pad, ac),
           "bwd": lambda: bwd_op(go, x, grid, mode, pad, ac, [True, True])}
    out = {}
    for d, fn in fns.items():
        try:
            fn()  # warm-up, and the check that PyTorch implements it
            out[d] = fn
        except Exception as e:  # noqa: BLE001 -- any refusal is a note, not a failure
            out[d] = (str(e).splitlines() or [type(e).__name__])[0]
    return out


def serve(threads):
    """Worker loop: reads problem strings on stdin, answers {"fwd": s | error, "bwd": ...}."""
    import time
    import torch
    torch.set_num_threads(threads)
    print(json.dumps({"version": torch.__version__}), flush=True)
    cache = {}
    for line in sys.stdin:
        spec = line.strip()
        if not spec:
            continue
        if spec not in cache:
            cache.clear()  # one case at a time: the inputs may be large
            cache[spec] = torch_case(torch, spec)
        reply = {}
        for d, fn in cache[spec].items():
            if isinstance(fn, str):
                reply[d] = fn
            else:
                t0 = time.perf_counter()
                fn()
                reply[d] = time.perf_counter() - t0
        print(json.dumps(reply), flush=True)


CRASHED, HUNG = "PyTorch crashed", "PyTorch hung"
# A reply (or a worker's start) slower than this is a hung PyTorch: torch 2.15's 16-bit kernels
# corrupt its heap, and a restarted worker once sat in futex waits for ten minutes instead of
# aborting (a 150-problem sweep). The slowest PyTorch call in the README's suite tables takes 2.1 s.
HANG_SECONDS = 300


class Worker:
    """A PyTorch in another interpreter (serve()). One that crashes, or gives no answer (nor, when
    it starts, its version) in hang_seconds, is restarted."""

    def __init__(self, python, threads, hang_seconds=HANG_SECONDS):
        self.python, self.threads, self.hang_seconds = python, threads, hang_seconds
        self.start()

    def reply(self):
        """The worker's next line, or "" if it died or gave none in hang_seconds (then killed,
        and self.hung set). (It writes one line per request: nothing waits in stdout's buffer.)"""
        self.hung = False
        if select.select([self.proc.stdout], [], [], self.hang_seconds)[0]:
            return self.proc.stdout.readline()
        self.proc.kill()
        self.hung = True
        return ""

    def start(self, tries=3):
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads))
        for _ in range(tries):
            self.proc = subprocess.Popen([self.python, HERE, "--serve", "--threads",
                                          str(self.threads)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, env=env)
            line = self.reply()
            if line:
                self.version = json.loads(line)["version"]
                return
            self.proc.wait()
        raise RuntimeError(f"{self.python}: no PyTorch worker started in {tries} tries")

    def time(self, spec):
        """{"fwd": seconds or why not, "bwd": ...}."""
        line, self.hung = "", False
        try:
            self.proc.stdin.write(spec + "\n")
            self.proc.stdin.flush()
            line = self.reply()
        except BrokenPipeError:
            pass
        if line:
            return json.loads(line)
        self.proc.wait()
        why = f"{HUNG} (no reply in {self.hang_seconds} s, killed)" if self.hung else \
            f"{CRASHED} (exit status {self.proc.returncode})"
        self.start()
        return {"fwd": why, "bwd": why}

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ---------------------------------------------------------------------------------------------
# The driver.

def run_ours(bench, threads, min_time, flt, cases=()):
    """One run of the benchmarks matching flt: {name: seconds}, {name: bytes}."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.pop("GRIDSAMPLE_IMPL", None)
    cmd = [bench, "--benchmark_format=json", f"--benchmark_min_time={min_time}",
           f"--benchmark_filter={flt}"] + [f"--gs_case={c}" for c in cases]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    times, moved = {}, {}
    for b in json.loads(out)["benchmarks"]:
        name = b["run_name"].replace("/real_time", "")
        times[name] = b["real_time"] / 1e3  # ms -> s
        if b.get("bytes_per_second"):
            moved[name] = b["bytes_per_second"] * times[name]
    return times, moved


def suite(bench):
    """[(name, problem string, FLOAT twin benchmark or None)] from --gs_list."""
    out = subprocess.run([bench, "--gs_list"], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        name, spec, twin = line.split()
        rows.append((name, spec, None if twin == "-" else twin))
    return rows


def copy_bandwidth(bench, threads, min_time, reps):
    rates = []
    for _ in range(reps):
        times, moved = run_ours(bench, threads, min_time, "^memory/copy/")
        if moved.get("memory/copy"):
            rates.append(moved["memory/copy"] / times["memory/copy"])
    return statistics.median(rates) if rates else None


def median(xs):
    return statistics.median(xs) if xs else None


def main():
    root = os.path.dirname(os.path.dirname(HERE))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(root, "build/bench/bench/gridsample_bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--filter", default=".*", help="regex over case names")
    ap.add_argument("--torch-python", action="append",
                    help="an interpreter with torch (repeatable; default /usr/bin/python3)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.threads)
        return 0

    workers = [Worker(p, args.threads) for p in (args.torch_python or ["/usr/bin/python3"])]
    tags = [f"t{w.version.split('+')[0].split('a0')[0]}" for w in workers]
    cases = [c for c in suite(args.bench) if re.search(args.filter, c[0])]
    copy_bw = copy_bandwidth(args.bench, args.threads, args.min_time, args.repetitions)

    rows, notes = [], []
    for name, spec, twin in cases:
        flt = f"^(suite/{name}/" + (f"|{twin}/" if twin else "") + ")"
        ours, moved = {}, {}
        theirs = [{"fwd": [], "bwd": []} for _ in workers]
        errors = [{} for _ in workers]
        for _ in range(args.repetitions):  # in turns (see the module's doc)
            times, m = run_ours(args.bench, args.threads, args.min_time, flt)
            moved.update(m)
            for k, v in times.items():
                ours.setdefault(k, []).append(v)
            for i, w in enumerate(workers):
                for d, v in w.time(spec).items():
                    if isinstance(v, str):
                        errors[i][d] = v
                    else:
                        theirs[i][d].append(v)
        for d in ("fwd", "bwd"):
            key = f"suite/{name}/{d}"
            for i, e in enumerate(errors):
                if d in e:
                    notes.append(f"{key}: torch {workers[i].version}: {e[d]}")
            nbytes = moved.get(key)
            floor = nbytes / copy_bw if nbytes and copy_bw else None
            rows.append(dict(name=name, spec=spec, dir=d, ours=median(ours.get(key)),
                             torch=[median(t[d]) for t in theirs], bytes=nbytes, floor=floor,
                             twin=median(ours.get(f"{twin}/{d}")) if twin else None))
    for w in workers:
        w.close()

    print(f"threads: {args.threads}, rounds: {args.repetitions} (medians), torch "
          f"{', '.join(w.version for w in workers)}, copy bandwidth "
          + (f"{copy_bw / 1e9:.2f} GB/s (read + write)" if copy_bw else "not measured"))
    fmt = lambda v, f: (f"{v:{f}}" if v is not None else "n/a")  # noqa: E731
    hdr = f"{'case':22} {'dir':3} {'ours ms':>8}"
    for t in tags:
        hdr += f" {t + ' ms':>10} {'x' + t[1:]:>7}"
    hdr += f" {'MB':>6} {'floor ms':>8} {'x floor':>7} {'x f32':>6}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        line = f"{r['name']:22} {r['dir']:3} {fmt(r['ours'] and r['ours'] * 1e3, '8.2f'):>8}"
        for t in r["torch"]:
            ratio = t / r["ours"] if t and r["ours"] else None
            line += f" {fmt(t and t * 1e3, '10.2f'):>10} {fmt(ratio, '7.1f'):>7}"
        xf = r["ours"] / r["floor"] if r["ours"] and r["floor"] else None
        line += (f" {fmt(r['bytes'] and r['bytes'] / 1e6, '6.1f'):>6}"
                 f" {fmt(r['floor'] and r['floor'] * 1e3, '8.2f'):>8} {fmt(xf, '7.1f'):>7}"
                 f" {fmt(r['ours'] / r['twin'] if r['ours'] and r['twin'] else None, '6.2f'):>6}")
        print(line)
    for n in notes:
        print("note:", n)

    # Issue 12's targets.
    print("\ntargets:")
    ok_all = True

    def check(label, value, goal, higher_is_better=True):
        nonlocal ok_all
        if value is None:
            return
        ok = value >= goal if higher_is_better else value <= goal
        ok_all &= ok
        print(f"  {label}: {value:.2f} (target {'>=' if higher_is_better else '<='} {goal}) "
              f"{'met' if ok else 'MISSED'}")

    for r in rows:
        k = parse_spec(r["spec"])
        for tag, t in zip(tags, r["torch"]):
            ratio = t / r["ours"] if t and r["ours"] else None
            check(f"{r['name']} {r['dir']} vs {tag}", ratio, 20 if (
                k["grid"] == "random" and k["nd"] == 3 and k["mode"] == 0 and r["dir"] == "bwd"
                and k["dtype"] in ("f32", "f64")) else 1)
        if k["grid"] != "random" and r["ours"] and r["floor"]:
            check(f"{r['name']} {r['dir']} x memory floor", r["ours"] / r["floor"], 3,
                  higher_is_better=False)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
