#!/usr/bin/env python3
"""The sweep behind "never slower than PyTorch": many problems, the worst ratios.

Draws --cases problems (seeded): 2D or 3D, batch 1-8, 1-64 channels, sizes from tiny (registration's
coarse levels, 8^3 or 16^2) to large, every interpolation (bicubic in 2D only: PyTorch has no 3D
bicubic), padding and alignCorners, FLOAT and DOUBLE (and the 16-bit types where the PyTorch has
them), both layouts, random, warp, affine and identity (resize) grids (NOTE [ Bench grids ] in
bench/gridsample_bench.cpp). Each problem is timed forward and backward through our benchmark
program (`--gs_case`, in batches; Google Benchmark's mean over at least --min-time) and through
each PyTorch given (tools/bench_vs_torch.py's workers, one call after a warm-up), with the same
thread count, in three interleaved rounds; each side's best round counts. Prints, per PyTorch,
how many problems we are slower on, the geometric mean speed-up, and the worst ratios with their
problem strings, which `gridsample_bench --gs_case=STRING` and tools/bench_vs_torch.py time
again.

Usage: tools/sweep_vs_torch.py [--bench build/bench/bench/gridsample_bench] [--threads 2]
           [--cases 300] [--seed 1] [--min-time 0.05] [--worst 15]
           [--torch-python /usr/bin/python3 --torch-python VENV/bin/python ...]
"""
import argparse
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_vs_torch as bvt  # noqa: E402


def draw(rng):
    nd = rng.choice([2, 3])
    mode = rng.choice(["bilinear", "bilinear", "nearest"] + (["bicubic"] if nd == 2 else []))
    if nd == 2:
        sizes = [16, 32, 64, 100, 128, 224, 256, 512]
    else:
        sizes = [8, 16, 24, 32, 48, 64, 80, 96]
    s_in = [rng.choice(sizes) for _ in range(nd)]
    scale = rng.choice([0.5, 1, 1, 1, 2])
    s_out = [max(1, int(s * scale)) for s in s_in] if rng.random() < 0.7 else \
        [rng.choice(sizes) for _ in range(nd)]
    n = rng.choice([1, 1, 2, 4, 8])
    c = rng.choice([1, 1, 2, 3, 4, 8, 16, 32, 64])
    # Keep each problem under about 3M output values and 3M input values.
    while n * c * math.prod(s_out) > 3e6 or n * c * math.prod(s_in) > 3e6:
        if c > 1:
            c //= 2
        elif n > 1:
            n //= 2
        else:
            s_in = [max(4, s // 2) for s in s_in]
            s_out = [max(4, s // 2) for s in s_out]
    dims = lambda d: "x".join(str(v) for v in d)  # noqa: E731
    kind = rng.choice(["random", "warp", "warp", "affine", "identity"])
    return "_".join([kind, f"{nd}d", f"n{n}c{c}",
                     "i" + dims(s_in), "o" + dims(s_out), mode,
                     rng.choice(["zeros", "border", "reflection"]), rng.choice(["ac0", "ac1"]),
                     rng.choice(["f32", "f32", "f32", "f64", "f16", "bf16"]),
                     rng.choice(["cf", "cl"])])


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(root, "build/bench/bench/gridsample_bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-time", type=float, default=0.05)
    ap.add_argument("--worst", type=int, default=15)
    ap.add_argument("--torch-python", action="append")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    specs = list(dict.fromkeys(draw(rng) for _ in range(args.cases)))
    workers = [bvt.Worker(p, args.threads) for p in (args.torch_python or ["/usr/bin/python3"])]
    ratios = [[] for _ in workers]  # (ratio, spec, dir, ours, theirs)
    skipped = [0 for _ in workers]
    crashed = [set() for _ in workers]  # problems on which that PyTorch died or hung (restarted)
    batch = 16
    for b in range(0, len(specs), batch):
        part = specs[b:b + batch]
        # Three rounds of (our benchmark over the batch, each PyTorch once per problem), the best
        # of the three on both sides, so that a burst of load on this shared machine hits both.
        ours, theirs = {}, [{} for _ in workers]
        for _ in range(3):
            times, _ = bvt.run_ours(args.bench, args.threads, args.min_time, "^case/", part)
            for k, v in times.items():
                ours[k] = min(ours.get(k, v), v)
            for spec in part:
                for i, w in enumerate(workers):
                    for d, v in w.time(spec).items():
                        if not isinstance(v, str):
                            theirs[i][(spec, d)] = min(theirs[i].get((spec, d), v), v)
                        elif v.startswith((bvt.CRASHED, bvt.HUNG)):
                            crashed[i].add(spec)
        for spec in part:
            for i in range(len(workers)):
                for d in ("fwd", "bwd"):
                    mine, best = ours.get(f"case/{spec}/{d}"), theirs[i].get((spec, d))
                    if mine and best:
                        ratios[i].append((best / mine, spec, d, mine, best))
                    else:
                        skipped[i] += 1
        print(f"  {min(b + batch, len(specs))}/{len(specs)} problems timed", file=sys.stderr)
    for w in workers:
        w.close()

    print(f"threads: {args.threads}, {len(specs)} problems (seed {args.seed}), forward and backward")
    for w, r, sk, dead in zip(workers, ratios, skipped, crashed):
        r.sort()
        slower = [x for x in r if x[0] < 1]
        geo = math.exp(sum(math.log(x[0]) for x in r) / len(r)) if r else float("nan")
        print(f"\ntorch {w.version}: {len(r)} timings ({sk} not run by this PyTorch), "
              f"geometric mean speed-up {geo:.2f}x, min {r[0][0]:.2f}x, "
              f"slower on {len(slower)}")
        if dead:
            print(f"  PyTorch crashed or hung on {len(dead)} of them: " + ", ".join(sorted(dead)))
        print(f"  {'speed-up':>8} {'ours ms':>8} {'torch ms':>9}  dir problem")
        for ratio, spec, d, mine, theirs in r[:args.worst]:
            print(f"  {ratio:8.2f} {mine * 1e3:8.3f} {theirs * 1e3:9.3f}  {d} {spec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
