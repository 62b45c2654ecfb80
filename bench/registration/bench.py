#!/usr/bin/env python3
"""gridsample-register against ANTs on real anatomy (bench/registration/README.md).

Known-field pairs: a head (MNI152 2009a T1 from the nilearn wheel, Colin27 from mricron-data) at
2 mm, warped by seeded random diffeomorphisms (gridsample-register --pair-from makes them; the
truth is exp(v) of a smooth velocity), and with --affine-seeds by a seeded known affine map on
top (--pair-affine; ours then runs its linear stages, --linear affine). Inter-subject pair: MNI152
(fixed) against Colin27 (moving), scored by the Dice of grey and white matter. Both tools run on the same files with the
same thread count; every score is computed here, from the files each tool wrote, in one way.
Run by bench/registration/run, which makes the virtual environment and the data.

Different-contrast pairs (--pairs contrast): the MNI152 known-field pairs of the same seeds with
the fixed image turned T2-like by a non-monotone intensity map (t2_like), registered with mutual
information by both tools.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import nibabel as nib


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def load(path):
    img = nib.load(path)
    return img, np.asanyarray(img.dataobj).astype(np.float32)


def crop_head(src, dst, margin=4, threshold=0.1, like=None):
    """The 1 mm volume cropped to the bounding box of voxels above threshold * max (or to the
    box of `like`), affine shifted accordingly."""
    img, v = load(src)
    v = v.reshape(v.shape[:3])
    ref = v if like is None else like
    idx = np.argwhere(ref > threshold * ref.max())
    lo = np.maximum(idx.min(0) - margin, 0)
    hi = np.minimum(idx.max(0) + margin + 1, v.shape)
    out = v[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
    aff = img.affine.copy()
    aff[:3, 3] = img.affine[:3, :3] @ lo + img.affine[:3, 3]
    nib.save(nib.Nifti1Image(out.astype(np.float32), aff), dst)
    return v


def run_tool(tool, args, out):
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run([tool] + args + ["--quiet", "--out", out], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"gridsample-register failed: {r.stderr.strip()}")
    return wall, r.stdout


def field_voxels(path, affine):
    """A DISPVECT field in world mm (RAS, our convention) -> voxels of the grid of `affine`."""
    _, d = load(path)
    d = d.reshape(d.shape[:3] + (3,))
    return d @ np.linalg.inv(affine[:3, :3]).T


def det_jacobian(t):
    g = [np.gradient(t[..., c], axis=(0, 1, 2)) for c in range(3)]
    j = np.empty(t.shape[:3] + (3, 3), np.float64)
    for c in range(3):
        for a in range(3):
            j[..., c, a] = g[c][a] + (1.0 if c == a else 0.0)
    return np.linalg.det(j)


def ncc(a, b):
    a = a.ravel().astype(np.float64)
    b = b.ravel().astype(np.float64)
    a -= a.mean()
    b -= b.mean()
    return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))


def nearest(labels, moving_affine, fixed_affine, t):
    """labels (moving grid) at fixed voxel x + t(x), nearest neighbour, 0 outside."""
    shape = t.shape[:3]
    x = np.stack(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij"), -1) + t
    m = np.linalg.inv(moving_affine) @ fixed_affine
    p = np.rint(x @ m[:3, :3].T + m[:3, 3]).astype(np.int64)
    inside = np.all((p >= 0) & (p < np.array(labels.shape)), -1)
    p = np.where(inside[..., None], p, 0)
    out = labels[p[..., 0], p[..., 1], p[..., 2]]
    return np.where(inside, out, 0)


def dice(a, b, label):
    x, y = a == label, b == label
    return float(2 * (x & y).sum() / max(1, x.sum() + y.sum()))


# The T2-like map of a T1 head: knots of T1 intensity (over its 99.5th percentile inside the
# head) -> T2-like intensity. On the MNI152 2009a T1 (2 mm) CSF lies near 0.3, grey matter near
# 0.71, white matter near 0.95 (medians where the tissue maps exceed 90%): CSF becomes the
# brightest, grey matter 0.6, white matter 0.35, as in a T2-weighted image; the background stays
# dark. Not monotone, so a linear or rank correlation cannot match the two images.
T2_KNOTS = ([0.0, 0.05, 0.3, 0.5, 0.71, 0.95, 1.2], [0.0, 0.05, 1.0, 0.8, 0.6, 0.35, 0.3])
T2_NOISE = 0.02  # Gaussian noise, standard deviation in the mapped units (seeded)


def t2_like(t1, seed):
    """A T2-like image from a T1 one: T2_KNOTS' piecewise-linear map, plus T2_NOISE."""
    x = t1 / np.percentile(t1[t1 > 0.1 * t1.max()], 99.5)
    y = np.interp(x, *T2_KNOTS)
    rng = np.random.default_rng(seed)
    return (y + T2_NOISE * rng.standard_normal(y.shape)).astype(np.float32)


def ants_register(fixed_path, moving_path, kind, work, **kwargs):
    import ants
    f = ants.image_read(fixed_path)
    m = ants.image_read(moving_path)
    t0 = time.perf_counter()
    reg = ants.registration(fixed=f, moving=m, type_of_transform=kind,
                            outprefix=os.path.join(work, "ants_"), **kwargs)
    wall = time.perf_counter() - t0
    comp = ants.apply_transforms(fixed=f, moving=m, transformlist=reg["fwdtransforms"],
                                 compose=os.path.join(work, "ants_comp_"))
    d = ants.image_read(comp).numpy()  # (x, y, z, 3), LPS mm
    affine = nib.load(fixed_path).affine
    d_ras = d * np.array([-1.0, -1.0, 1.0])
    t = d_ras @ np.linalg.inv(affine[:3, :3]).T
    warped = reg["warpedmovout"].numpy()
    return wall, t, warped


def ours_register(tool, fixed_path, moving_path, threads, work, extra):
    wall, out = run_tool(tool, ["--fixed", fixed_path, "--moving", moving_path, "--threads",
                                str(threads)] + extra, work)
    affine = nib.load(fixed_path).affine
    t = field_voxels(os.path.join(work, "field.nii.gz"), affine)
    _, warped = load(os.path.join(work, "warped.nii.gz"))
    return wall, t, warped


def scores(t, warped, fixed, truth=None, mask=None):
    det = det_jacobian(t)
    s = {"folded": float((det <= 0).mean()), "min_det": float(det.min()),
         "ncc": ncc(fixed, warped)}
    if truth is not None:
        e = np.linalg.norm(t - truth, axis=-1)[mask]
        s["mean"] = float(e.mean())
        s["p95"] = float(np.percentile(e, 95))
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--data", required=True, help="folder holding the extracted MNI152 files")
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--max-disp", type=float, default=5)
    ap.add_argument("--pairs", default="known,inter,contrast",
                    help="which pairs, comma-separated: known (known-field pairs, same contrast), "
                    "inter (MNI152 vs Colin27), contrast (T2-like vs T1 known-field pairs, MI)")
    ap.add_argument("--ants", default="SyN", help="ANTsPy type_of_transform values, comma-separated")
    ap.add_argument("--ours", default="", help="extra gridsample-register options")
    ap.add_argument("--no-inter", action="store_true")
    ap.add_argument("--affine-seeds", default="1",
                    help="seeds of the known-field pairs with a known affine map on top")
    ap.add_argument("--only-affine", action="store_true",
                    help="only the pairs with a known affine map (no --seeds pairs, no "
                    "inter-subject pair)")
    ap.add_argument("--ours-affine", default="--linear affine",
                    help="gridsample-register options added on the pairs with an affine map")
    a = ap.parse_args()
    if a.only_affine:
        a.seeds, a.no_inter = "", True
    os.environ["ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS"] = str(a.threads)
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    os.makedirs(a.work, exist_ok=True)
    pairs = set(p for p in a.pairs.split(",") if p)
    if pairs - {"known", "inter", "contrast"}:
        ap.error(f"--pairs takes known, inter and contrast, got {a.pairs!r}")
    contrast_seeds = [int(x) for x in a.seeds.split(",") if x] if "contrast" in pairs else []
    if "known" not in pairs:
        a.seeds, a.affine_seeds = "", ""
    if "inter" not in pairs:
        a.no_inter = True
    tpl = "/usr/share/mricron/templates"
    mni = os.path.join(a.data, "mni_icbm152_%s_tal_nlin_sym_09a_converted.nii.gz")
    heads = {}
    # 1 mm heads cropped to their bounding box, and the matching brain masks and tissue maps.
    w = lambda n: os.path.join(a.work, n)  # noqa: E731
    t1 = crop_head(mni % "t1", w("mni_head.nii.gz"))
    _, gm = load(mni % "gm")
    _, wm = load(mni % "wm")
    for name, v in (("gm", gm), ("wm", wm), ("brain", ((gm + wm) > 0.3).astype(np.float32))):
        src = w(f"mni_{name}_full.nii.gz")
        nib.save(nib.Nifti1Image(v, nib.load(mni % "t1").affine), src)
        crop_head(src, w(f"mni_{name}.nii.gz"), like=t1)
    ch2 = crop_head(os.path.join(tpl, "ch2.nii.gz"), w("colin_head.nii.gz"))
    crop_head(os.path.join(tpl, "ch2bet.nii.gz"), w("colin_brain.nii.gz"), like=ch2)
    heads = {"MNI152": "mni", "Colin27": "colin"}

    ours_extra = a.ours.split() if a.ours else []
    kinds = [k for k in a.ants.split(",") if k]
    rows = []

    def add(pair, tool, wall, s):
        rows.append((pair, tool, wall, s))
        log(f"  {pair:28s} {tool:24s} {wall:7.1f} s  " +
            "  ".join(f"{k} {v:.4g}" for k, v in s.items()))

    seeds = [(int(x), False) for x in a.seeds.split(",") if x]
    seeds += [(int(x), True) for x in a.affine_seeds.split(",") if x]
    for title, stem in heads.items():
        for seed, with_affine in seeds:
            pair = f"{title} known field{' + affine' if with_affine else ''}, seed {seed}"
            d = w(f"{stem}_{'a' if with_affine else 's'}{seed}")
            common = ["--voxel-size", "2", "--max-disp", str(a.max_disp), "--seed", str(seed),
                      "--levels", "1", "--iters", "1", "--threads", str(a.threads)]
            common += ["--pair-affine"] if with_affine else []
            run_tool(a.tool, ["--pair-from", w(f"{stem}_head.nii.gz")] + common, d + "/pair")
            run_tool(a.tool, ["--pair-from", w(f"{stem}_brain.nii.gz")] + common, d + "/mask")
            fixed_path, moving_path = d + "/pair/fixed.nii.gz", d + "/pair/moving.nii.gz"
            _, fixed = load(fixed_path)
            affine = nib.load(fixed_path).affine
            truth = field_voxels(d + "/pair/true_field.nii.gz", affine)
            _, mask = load(d + "/mask/fixed.nii.gz")
            mask = mask > 0.5 * mask.max()
            extra = ours_extra + (a.ours_affine.split() if with_affine else [])
            wall, t, warped = ours_register(a.tool, fixed_path, moving_path, a.threads,
                                            d + "/ours", extra)
            add(pair, "gridsample-register", wall, scores(t, warped, fixed, truth, mask))
            for k in kinds:
                wall, t, warped = ants_register(fixed_path, moving_path, k, d)
                add(pair, f"ANTs {k}", wall, scores(t, warped, fixed, truth, mask))

    # Different contrasts: the MNI152 known-field pair with a T2-like fixed image (t2_like of the
    # warped T1), the T1 moving. Both tools register with mutual information (ours --metric mi,
    # ANTs with aff_metric and syn_metric 'mattes'); NCC is scored against the fixed T1 (before
    # the map), which the warped T1 should match.
    for seed in contrast_seeds:
        pair = f"MNI152 T2-like vs T1, seed {seed}"
        d = w(f"mni_s{seed}")
        if str(seed) not in a.seeds.split(","):  # else the known-field loop made it just now
            common = ["--voxel-size", "2", "--max-disp", str(a.max_disp), "--seed", str(seed),
                      "--levels", "1", "--iters", "1", "--threads", str(a.threads)]
            run_tool(a.tool, ["--pair-from", w("mni_head.nii.gz")] + common, d + "/pair")
            run_tool(a.tool, ["--pair-from", w("mni_brain.nii.gz")] + common, d + "/mask")
        img, fixed_t1 = load(d + "/pair/fixed.nii.gz")
        truth = field_voxels(d + "/pair/true_field.nii.gz", img.affine)
        _, mask = load(d + "/mask/fixed.nii.gz")
        mask = mask > 0.5 * mask.max()
        fixed_path, moving_path = d + "/pair/fixed_t2like.nii.gz", d + "/pair/moving.nii.gz"
        nib.save(nib.Nifti1Image(t2_like(fixed_t1, seed), img.affine), fixed_path)
        dc = d + "/contrast"
        os.makedirs(dc, exist_ok=True)
        wall, t, warped = ours_register(a.tool, fixed_path, moving_path, a.threads, dc + "/ours",
                                        ["--metric", "mi"] + ours_extra)
        add(pair, "gridsample-register", wall, scores(t, warped, fixed_t1, truth, mask))
        for k in kinds:
            wall, t, warped = ants_register(fixed_path, moving_path, k, dc,
                                            aff_metric="mattes", syn_metric="mattes")
            add(pair, f"ANTs {k} (mattes)", wall, scores(t, warped, fixed_t1, truth, mask))

    if not a.no_inter:
        # MNI152 (fixed) against Colin27 (moving), both at 2 mm (the --pair-from resampling with
        # no displacement), and their grey/white matter labels.
        d = w("inter")
        prep = ["--voxel-size", "2", "--max-disp", "0", "--levels", "1", "--iters", "1"]
        for name, src in (("mni", "mni_head"), ("colin", "colin_head"), ("mni_gm", "mni_gm"),
                          ("mni_wm", "mni_wm"), ("colin_brain", "colin_brain")):
            run_tool(a.tool, ["--pair-from", w(src + ".nii.gz")] + prep, f"{d}/{name}")
        fixed_path, moving_path = d + "/mni/moving.nii.gz", d + "/colin/moving.nii.gz"
        _, fixed = load(fixed_path)
        fa, ma = nib.load(fixed_path).affine, nib.load(moving_path).affine
        _, g = load(d + "/mni_gm/moving.nii.gz")
        _, wmm = load(d + "/mni_wm/moving.nii.gz")
        fixed_labels = np.where((g > 0.5) & (g >= wmm), 1, np.where(wmm > 0.5, 2, 0))
        # Colin27: three intensity classes inside its brain mask (1-D k-means): CSF, GM, WM.
        _, cb = load(d + "/colin_brain/moving.nii.gz")
        _, colin = load(moving_path)
        inside = cb > 0.5 * cb.max()
        vals = colin[inside]
        c = np.percentile(vals, [10, 50, 90])
        for _ in range(50):
            lab = np.argmin(np.abs(vals[:, None] - c[None]), 1)
            c = np.array([vals[lab == k].mean() for k in range(3)])
        moving_labels = np.zeros(colin.shape, np.int64)
        moving_labels[inside] = np.array([0, 1, 2])[lab]  # CSF dropped, GM 1, WM 2
        before = nearest(moving_labels, ma, fa, np.zeros(fixed.shape + (3,)))
        s0 = {"dice_gm": dice(before, fixed_labels, 1), "dice_wm": dice(before, fixed_labels, 2)}
        log(f"  inter-subject, before: {s0}")
        # The same pair with the moving head turned by 15 degrees about z and moved by
        # (20, -15, 10) mm (its affine changed, the voxels kept): scans that are really apart.
        c, sn = np.cos(np.radians(15)), np.sin(np.radians(15))
        turn = np.array([[c, -sn, 0, 20], [sn, c, 0, -15], [0, 0, 1, 10], [0, 0, 0, 1]])
        turned_path = d + "/colin_turned.nii.gz"
        nib.save(nib.Nifti1Image(colin.astype(np.float32), turn @ ma), turned_path)
        for pair, path, aff, sub in (("MNI152 vs Colin27", moving_path, ma, ""),
                                     ("MNI152 vs Colin27 turned and moved", turned_path,
                                      turn @ ma, "_turned")):
            wall, t, warped = ours_register(a.tool, fixed_path, path, a.threads,
                                            d + "/ours" + sub, ours_extra)
            s = scores(t, warped, fixed)
            lab = nearest(moving_labels, aff, fa, t)
            s.update(dice_gm=dice(lab, fixed_labels, 1), dice_wm=dice(lab, fixed_labels, 2))
            add(pair, "gridsample-register", wall, s)
            os.makedirs(d + sub, exist_ok=True)
            for k in kinds:
                wall, t, warped = ants_register(fixed_path, path, k, d + sub)
                s = scores(t, warped, fixed)
                lab = nearest(moving_labels, aff, fa, t)
                s.update(dice_gm=dice(lab, fixed_labels, 1), dice_wm=dice(lab, fixed_labels, 2))
                add(pair, f"ANTs {k}", wall, s)
        rows.append(("MNI152 vs Colin27", "no registration", 0.0, s0))

    shape = nib.load(w("mni_s1/pair/fixed.nii.gz")).shape if os.path.exists(
        w("mni_s1/pair/fixed.nii.gz")) else None
    print(f"\n{a.threads} threads; known-field pairs up to {a.max_disp:g} voxels"
          + (f"; MNI152 pairs {shape[0]}x{shape[1]}x{shape[2]}" if shape else ""))
    print("\n| pair | tool | wall (s) | field error mean / p95 (vox) | det J <= 0 | min det J "
          "| NCC | Dice GM / WM |")
    print("|---|---|---|---|---|---|---|---|")
    for pair, tool, wall, s in rows:
        err = f"{s['mean']:.3f} / {s['p95']:.3f}" if "mean" in s else "-"
        fold = f"{100 * s['folded']:.3f}%" if "folded" in s else "-"
        mind = f"{s['min_det']:.3f}" if "min_det" in s else "-"
        nc = f"{s['ncc']:.4f}" if "ncc" in s else "-"
        dc = f"{s['dice_gm']:.3f} / {s['dice_wm']:.3f}" if "dice_gm" in s else "-"
        wl = f"{wall:.1f}" if wall > 0 else "-"
        print(f"| {pair} | {tool} | {wl} | {err} | {fold} | {mind} | {nc} | {dc} |")


if __name__ == "__main__":
    main()
