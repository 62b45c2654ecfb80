"""Shared helpers of the gridsample Python suite (run by scripts/test; see docs/python.md)."""

import numpy as np
import pytest
import torch

import gridsample

TORCH2 = tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 0)
HAS_CUSTOM_OP = gridsample.torch._HAS_CUSTOM_OP
MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
# SPEC §1 for FLOAT and DOUBLE; 16-bit types are computed in FLOAT and rounded once (SPEC §4.7),
# so they are compared with torch's FLOAT result on the same (upcast) values, within two units
# of their last place.
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2 * 2.0**-10,
       torch.bfloat16: 2 * 2.0**-7}


@pytest.fixture(autouse=True)
def _restore_state():
    """Every test starts unpatched, with no thread override, and leaves it so."""
    gridsample.torch.unpatch()
    gridsample.set_num_threads(0)
    threads = torch.get_num_threads()
    yield
    gridsample.torch.unpatch()
    gridsample.set_num_threads(0)
    torch.set_num_threads(threads)


def rel_err(got, ref, floor):
    """max |got - ref| / max(max |ref|, floor): the crosscheck's measure (tools/
    torch_crosscheck.py, NOTE [ error floor ])."""
    got, ref = got.double(), ref.double()
    if ref.numel() == 0:
        return 0.0
    den = max(ref.abs().max().item(), floor, 1e-300)
    return (got - ref).abs().max().item() / den


def unnormalize_np(g, s, align_corners, dtype):
    g = g.astype(dtype)
    one, two = dtype(1), dtype(2)
    if align_corners:
        return ((g + one) / two) * dtype(s - 1)
    return ((g + one) * dtype(s) - one) / two


def reflect_np(u, s, align_corners, dtype):
    if align_corners:
        lo, span = dtype(0), dtype(s - 1)
    else:
        lo, span = dtype(-0.5), dtype(s)
    if span == 0:
        return np.zeros_like(u)
    a = np.abs(u - lo)
    k = np.floor(a / span)
    r = np.fmod(a, span)
    return np.where(k % 2 == 0, lo + r, lo + span - r).astype(dtype)


def nearest_spec(x, grid, padding, align_corners, grad_out=None):
    """SPEC §4.2/§4.4 for nearest, written plainly in NumPy (a test oracle for .5 ties: round half
    to even). x (N, C, *spatial) and grid (N, *out, k) as float arrays; computes in x's dtype
    (float32 for 16-bit types, as the library). Returns the forward, or with grad_out the
    inputGrad (a scatter-add of grad_out in point order)."""
    ct = np.float64 if x.dtype == np.float64 else np.float32
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    k = grid.shape[-1]
    idx = []
    valid = np.ones(grid.shape[:-1], bool)
    for axis in range(k):  # grid component `axis` indexes spatial dim k-1-axis
        s = spatial[k - 1 - axis]
        u = unnormalize_np(grid[..., axis], s, align_corners, ct)
        if padding == "border":
            u = np.clip(u, 0, s - 1).astype(ct)
        elif padding == "reflection":
            u = np.clip(reflect_np(u, s, align_corners, ct), 0, s - 1).astype(ct)
        with np.errstate(invalid="ignore"):
            i = np.rint(u)
            ok = np.isfinite(i) & (i >= 0) & (i < s)
        valid &= ok
        idx.append(np.where(ok, i, 0).astype(np.int64))
    if grad_out is None:
        out = np.zeros((n, c) + grid.shape[1:-1], ct)
    else:
        out = np.zeros(x.shape, ct)
    for b in range(n):
        pos = tuple(idx[k - 1 - d][b] for d in range(k))  # spatial order (D,) H, W
        if grad_out is None:
            vals = x[b][(slice(None),) + pos]  # (C, *out)
            out[b] = np.where(valid[b][None], vals, 0)
        else:
            v = valid[b]
            for ch in range(c):
                np.add.at(out[b, ch], tuple(p[v] for p in pos), grad_out[b, ch][v].astype(ct))
    return out
