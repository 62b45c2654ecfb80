"""gridsample.grid_sample against torch.nn.functional.grid_sample on random problems.

Each case draws 2D or 3D, N 1..3, C 1..4, spatial sizes 1..6, mode, padding, align_corners,
dtype (float32/float64/float16/bfloat16), and per tensor a memory layout: contiguous,
channels_last(_3d), a strided slice of a larger tensor, a permuted memory order, or (inputs only)
a stride-0 broadcast over N. A fifth of the grids put every coordinate exactly on a .5 tie.
Forward: 320 cases; backward (through autograd, with a random subset of inputs needing
gradients): 320 cases. The seed of a failing case is in its test id.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import gridsample
from conftest import DTYPES, PADDINGS, TOL, TORCH2, nearest_spec, rel_err

CASES_PER_DIRECTION = 320


def _layout_view(rng, t, kind):
    """t's values in a tensor of the given memory layout (a view where the kind is a view)."""
    nd = t.dim()
    if kind == "channels_last":
        fmt = torch.channels_last if nd == 4 else torch.channels_last_3d
        return t.contiguous(memory_format=fmt)
    if kind == "strided":  # every other element of a larger tensor, at an offset
        big = torch.full([2 * s + 1 for s in t.shape], float("nan"), dtype=t.dtype)
        view = big[tuple(slice(1, 1 + 2 * s, 2) for s in t.shape)]
        view.copy_(t)
        return view
    if kind == "permuted":
        order = [int(v) for v in rng.permutation(nd)]
        inverse = [order.index(i) for i in range(nd)]
        return t.permute(order).contiguous().permute(inverse)
    if kind == "broadcast":  # stride 0 over N: every item the same
        return t[:1].expand(t.shape)
    return t.contiguous()


def _tie_grid(rng, n, out_sizes, in_sizes, align_corners):
    """A grid whose every unnormalized coordinate is k + 0.5 (SPEC §4.1), some outside."""
    k = len(in_sizes)
    comps = []
    for axis in range(k):
        s = in_sizes[k - 1 - axis]
        kk = rng.integers(-2, s + 1, size=(n,) + tuple(out_sizes)).astype(np.float64)
        if align_corners:
            g = (2 * (kk + 0.5)) / max(s - 1, 1) - 1
        else:
            g = (2 * (kk + 0.5) + 1) / s - 1
        comps.append(g)
    return torch.from_numpy(np.stack(comps, -1))


def make_case(seed, need_backward):
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(2, 4))
    modes = ["bilinear", "nearest"] + (["bicubic"] if nd == 2 else [])
    mode = modes[rng.integers(len(modes))]
    padding = PADDINGS[rng.integers(3)]
    ac = bool(rng.integers(2))
    dtype = DTYPES[rng.integers(len(DTYPES))]
    n, c = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    in_sizes = [int(v) for v in rng.integers(1, 7, size=nd)]
    out_sizes = [int(v) for v in rng.integers(1, 7, size=nd)]
    x = torch.from_numpy(rng.uniform(-1, 1, size=(n, c, *in_sizes)))
    tie = rng.random() < 0.2 and (nd == 2 or not need_backward)
    if tie:
        grid = _tie_grid(rng, n, out_sizes, in_sizes, ac)
    else:
        grid = torch.from_numpy(rng.uniform(-1.3, 1.3, size=(n, *out_sizes, nd)))
    x, grid = x.to(dtype), grid.to(dtype)
    kinds = ["contiguous", "channels_last", "strided", "permuted", "broadcast"]
    xk = kinds[rng.integers(5)]
    gk = kinds[rng.integers(4)]  # grid: no broadcast (torch would sum its gradient)
    if xk == "broadcast" and need_backward:
        xk = "strided"
    x = _layout_view(rng, x, xk)
    grid = _layout_view(rng, grid, gk)
    go = torch.from_numpy(rng.uniform(-1, 1, size=(n, c, *out_sizes))).to(dtype)
    go = _layout_view(rng, go, kinds[rng.integers(5)])
    mask = [(True, True), (True, False), (False, True)][rng.integers(3)]
    name = (f"{nd}d_n{n}c{c}_i{'x'.join(map(str, in_sizes))}_o{'x'.join(map(str, out_sizes))}_"
            f"{mode}_{padding}_ac{int(ac)}_{str(dtype)[6:]}_{xk}_{gk}{'_ties' if tie else ''}")
    return dict(x=x, grid=grid, go=go, mode=mode, padding=padding, ac=ac, dtype=dtype,
                mask=mask, name=name, tie=tie)


def _mult(x, ac):
    return max(((s - 1) / 2 if ac else s / 2) for s in x.shape[2:])


def _reference_dtype(dtype):
    # torch's 16-bit CPU kernels are not the reference (1.13 has none; later ones misbehave at
    # large sizes, issue 13): compare with its FLOAT kernel on the same values.
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


@pytest.mark.parametrize("seed", range(CASES_PER_DIRECTION))
def test_forward(seed):
    case = make_case(1000 + seed, need_backward=False)
    x, grid = case["x"], case["grid"]
    got = gridsample.grid_sample(x, grid, case["mode"], case["padding"], case["ac"])
    assert got.dtype == x.dtype and got.shape == x.shape[:2] + grid.shape[1:-1]
    assert got.is_contiguous()
    rt = _reference_dtype(case["dtype"])
    if case["mode"] == "nearest" and x.dim() == 5 and not TORCH2:
        # torch 1.13's 3D nearest forward rounds .5 away from zero, SPEC §4.4 to even; ties are
        # not rare (the tie grids, and coarse 16-bit grids), so all these go to the SPEC.
        ref = torch.from_numpy(nearest_spec(x.to(rt).numpy(), grid.to(rt).numpy(),
                                                    case["padding"], case["ac"]))
    else:
        ref = F.grid_sample(x.to(rt), grid.to(rt), case["mode"], case["padding"], case["ac"])
    floor = 0.1 * x.abs().max().item()
    err = rel_err(got, ref, floor)
    assert err <= TOL[case["dtype"]], f"{case['name']}: error {err:.3g}"


@pytest.mark.parametrize("seed", range(CASES_PER_DIRECTION))
def test_backward(seed):
    case = make_case(5000 + seed, need_backward=True)
    want_x, want_grid = case["mask"]
    rt = _reference_dtype(case["dtype"])
    x = case["x"].detach().requires_grad_(want_x)
    grid = case["grid"].detach().requires_grad_(want_grid)
    out = gridsample.grid_sample(x, grid, case["mode"], case["padding"], case["ac"])
    out.backward(case["go"])
    xr = case["x"].detach().to(rt).requires_grad_(want_x)
    gr = case["grid"].detach().to(rt).requires_grad_(want_grid)
    F.grid_sample(xr, gr, case["mode"], case["padding"], case["ac"]).backward(case["go"].to(rt))
    if case["mode"] == "nearest" and x.dim() == 5 and not TORCH2:
        # As in test_forward: torch 1.13 rounds 3D nearest .5 ties away from zero.
        xr.grad = torch.from_numpy(nearest_spec(
            case["x"].to(rt).numpy(), case["grid"].to(rt).numpy(), case["padding"], case["ac"],
            grad_out=case["go"].to(rt).numpy())) if want_x else None
    tol = TOL[case["dtype"]]
    go_max = case["go"].abs().max().item()
    x_max = case["x"].abs().max().item()
    if want_x:
        assert x.grad.dtype == x.dtype and x.grad.shape == x.shape
        err = rel_err(x.grad, xr.grad, 0.1 * go_max)
        assert err <= tol, f"{case['name']}: inputGrad error {err:.3g}"
    else:
        assert x.grad is None
    if want_grid:
        assert grid.grad.dtype == grid.dtype and grid.grad.shape == grid.shape
        floor = 0.1 * x.shape[1] * x_max * go_max * _mult(x, case["ac"])
        err = rel_err(grid.grad, gr.grad, floor)
        assert err <= tol, f"{case['name']}: gridGrad error {err:.3g}"
    else:
        assert grid.grad is None


def test_ties_are_really_ties():
    """The tie grids hit .5 exactly (else the tie cases would test nothing)."""
    rng = np.random.default_rng(0)
    for ac in (False, True):
        g = _tie_grid(rng, 1, [5, 5, 5], [4, 6, 7], ac).numpy()
        for axis, s in enumerate([7, 6, 4]):
            u = ((g[..., axis] + 1) / 2) * (s - 1) if ac else ((g[..., axis] + 1) * s - 1) / 2
            if ac and s == 1:
                continue
            assert np.all(np.abs(u - np.floor(u) - 0.5) < 1e-12)


def test_nearest_ties_round_half_to_even():
    """SPEC §4.4: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 (torch 1.13's 3D forward gives 1, 2, 3)."""
    for nd in (2, 3):
        s = 4
        x = torch.arange(float(s)).reshape((1, 1) + (1,) * (nd - 1) + (s,)).double()
        x = x.expand((1, 1) + (s,) * (nd - 1) + (s,)).contiguous()
        us = torch.tensor([0.5, 1.5, 2.5], dtype=torch.float64)
        g = (2 * us + 1) / s - 1  # align_corners=False
        grid = torch.zeros((1,) + (1,) * (nd - 1) + (3, nd), dtype=torch.float64)
        grid[..., 0] = g
        out = gridsample.grid_sample(x, grid, "nearest", "zeros", False)
        assert out.flatten().tolist() == [0.0, 2.0, 2.0]
