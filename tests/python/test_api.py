"""The rest of the contract: errors (nothing written), empty tensors, non-finite grids, devices,
threads (bit-identical for any count), the NumPy API, the patch switch."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import gridsample
import gridsample.numpy as gnp


def _pair(nd=2, n=2, c=3, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((n, c) + (5,) * nd, generator=g).to(dtype)
    grid = (torch.rand((n,) + (4,) * nd + (nd,), generator=g) * 2.2 - 1.1).to(dtype)
    return x, grid


# Errors: the same exception types as torch for the same mistakes, the library's message.

@pytest.mark.parametrize("make,exc,match", [
    (lambda x, g: (x[0], g), RuntimeError, "rank|dim"),                     # wrong rank
    (lambda x, g: (x, g[:1]), RuntimeError, "N \\(dim 0\\)"),               # N mismatch
    (lambda x, g: (x, g[..., :1]), RuntimeError, "grid"),                   # last dim 1
    (lambda x, g: (x, g.double()), RuntimeError, "dtype"),                  # dtype mismatch
    (lambda x, g: (x.long(), g.long()), RuntimeError, "INT64"),             # integer
    (lambda x, g: (x.to(torch.complex64), g.to(torch.complex64)), RuntimeError, "COMPLEX"),
    (lambda x, g: (x[:, :, :0], g), RuntimeError, "empty|zero|non-zero|0"),  # empty spatial
])
def test_errors_like_torch(make, exc, match):
    x, grid = _pair()
    a, b = make(x, grid)
    with pytest.raises(exc):  # torch raises the same type for the same mistake
        F.grid_sample(a, b, align_corners=False)
    with pytest.raises(exc, match=match) as info:
        gridsample.grid_sample(a, b, align_corners=False)
    assert isinstance(info.value, (gridsample.GridSampleError, gridsample.GridSampleTypeError))


def test_error_classes():
    x, grid = _pair()
    with pytest.raises(TypeError):
        gridsample.grid_sample(x, grid.double(), align_corners=False)
    with pytest.raises(TypeError):
        gridsample.grid_sample(x.int(), grid.int(), align_corners=False)
    with pytest.raises(ValueError):
        gridsample.grid_sample(x, grid[:1], align_corners=False)


def test_bad_mode_strings():
    x, grid = _pair()
    with pytest.raises(ValueError, match="expected mode"):
        gridsample.grid_sample(x, grid, mode="linear", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode"):
        gridsample.grid_sample(x, grid, padding_mode="wrap", align_corners=False)


def test_align_corners_none_warns_like_torch():
    x, grid = _pair()
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        a = gridsample.grid_sample(x, grid)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        b = F.grid_sample(x, grid)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    assert len(ours) == 1 and torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gridsample.grid_sample(x, grid, align_corners=False)


@pytest.mark.parametrize("shape_x,shape_g", [
    ((0, 3, 5, 5), (0, 4, 4, 2)), ((2, 0, 5, 5), (2, 4, 4, 2)), ((2, 3, 5, 5), (2, 0, 4, 2)),
    ((0, 3, 5, 5, 5), (0, 2, 2, 2, 3)), ((1, 2, 4, 4, 4), (1, 2, 0, 2, 3))])
def test_empty_like_torch(shape_x, shape_g):
    x = torch.randn(shape_x, requires_grad=True)
    grid = (torch.rand(shape_g) * 2 - 1).requires_grad_()
    ours = gridsample.grid_sample(x, grid, align_corners=False)
    ref = F.grid_sample(x, grid, align_corners=False)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    ours.sum().backward()
    gx, gg = x.grad.clone(), grid.grad.clone()
    x.grad = grid.grad = None
    ref.sum().backward()
    assert torch.equal(gx, x.grad) and torch.equal(gg, grid.grad)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_nonfinite_grid(mode, padding):
    """SPEC §4.6: a coordinate that is NaN or ±Inf after unnormalizing and padding samples
    nothing (0 there, no gradient). Border padding clamps ±Inf to the border first, so there
    those points read the border like any huge finite coordinate. Never a crash."""
    x, grid = _pair(dtype=torch.float64)
    bad = grid.clone()
    bad[0, 1, 2, 0] = float("nan")
    bad[1, 0, 0, 1] = float("inf")
    bad[1, 3, 3, 0] = -float("inf")
    xr, br = x.clone().requires_grad_(), bad.clone().requires_grad_()
    out = gridsample.grid_sample(xr, br, mode, padding, False)
    clamp_inf = padding == "border" and mode != "bicubic"
    finite_equiv = bad.nan_to_num(nan=0.0, posinf=1e6, neginf=-1e6)
    ref = F.grid_sample(x, finite_equiv, mode, padding, False)
    nothing = torch.isnan(bad).any(-1) if clamp_inf else ~torch.isfinite(bad).all(-1)
    ref.permute(0, 2, 3, 1)[nothing] = 0
    assert torch.isfinite(out).all()
    assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12)
    out.sum().backward()
    assert torch.isfinite(xr.grad).all() and torch.isfinite(br.grad).all()
    assert torch.all(br.grad[nothing] == 0) and torch.all(br.grad[~torch.isfinite(bad)] == 0)


def test_other_devices_go_to_torch(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("gridsample._ext called for a non-CPU tensor")

    monkeypatch.setattr(gridsample._ext, "forward", fail)
    x = torch.empty(2, 3, 5, 5, device="meta")
    grid = torch.empty(2, 4, 4, 2, device="meta")
    out = gridsample.grid_sample(x, grid, align_corners=False)
    assert out.device.type == "meta" and out.shape == (2, 3, 4, 4)


def test_non_tensors_like_torch():
    x, grid = _pair()
    with pytest.raises(TypeError):
        F.grid_sample(x.numpy(), grid, align_corners=False)
    with pytest.raises(TypeError):
        gridsample.grid_sample(x.numpy(), grid, align_corners=False)


def test_layouts_in_place_no_copy(monkeypatch):
    """channels_last and strided views reach the library as they are (same data pointers)."""
    seen = []
    real = gridsample._ext.forward

    def spy(x, grid, out, *args):
        # the torch layer passes DLPack capsules; as tensors again they show what was passed
        x, grid, out = (torch.utils.dlpack.from_dlpack(t) for t in (x, grid, out))
        seen.append((x.data_ptr(), x.stride(), grid.data_ptr(), grid.stride()))
        return real(x, grid, out, *args)

    monkeypatch.setattr(gridsample._ext, "forward", spy)
    x, grid = _pair(nd=3)
    xc = x.contiguous(memory_format=torch.channels_last_3d)
    big = torch.randn(2, 6, 8, 5, 3)
    gv = big[:, 1:5, ::2, 1:5]
    gv.copy_(grid)
    gridsample.grid_sample(xc, gv, align_corners=True)
    assert seen == [(xc.data_ptr(), xc.stride(), gv.data_ptr(), gv.stride())]


# Threads.

def _big_case():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 5, 17, 19, 23, generator=g)
    grid = torch.rand(2, 13, 17, 19, 3, generator=g) * 2.2 - 1.1
    go = torch.randn(2, 5, 13, 17, 19, generator=g)
    return x, grid, go


def _run(x, grid, go, mode):
    xr, gr = x.clone().requires_grad_(), grid.clone().requires_grad_()
    out = gridsample.grid_sample(xr, gr, mode, "reflection", False)
    out.backward(go)
    return out.detach(), xr.grad, gr.grad


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_bit_identical_for_any_thread_count(mode):
    x, grid, go = _big_case()
    results = []
    for n in (1, 2, 3, 5):
        gridsample.set_num_threads(n)
        results.append(_run(x, grid, go, mode))
        results.append(tuple(gnp.grid_sample_backward(go.numpy(), x.numpy(), grid.numpy(), mode,
                                                      "reflection")))
    for r in results[2::2]:
        assert all(torch.equal(a, b) for a, b in zip(r, results[0]))
    for r in results[3::2]:
        assert all(np.array_equal(a, b) for a, b in zip(r, results[1]))
    assert np.array_equal(results[1][0], results[0][1].numpy())


def test_workspace_kept_and_released():
    # NOTE [ Cached workspace ]: the thread keeps its workspace between calls; release frees it;
    # the results do not depend on it.
    x, grid, go = _big_case()
    gridsample.release_workspace()
    assert gridsample._ext.workspace_size() == 0
    first = _run(x, grid, go, "bilinear")
    kept = gridsample._ext.workspace_size()
    assert kept > 0
    again = _run(x, grid, go, "bilinear")
    assert gridsample._ext.workspace_size() == kept
    gridsample.release_workspace()
    assert gridsample._ext.workspace_size() == 0
    last = _run(x, grid, go, "bilinear")
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert all(torch.equal(a, b) for a, b in zip(first, last))


def test_thread_counts_passed(monkeypatch):
    counts = []
    real_f = gridsample._ext.forward

    def spy(*args):
        counts.append(args[7])
        return real_f(*args)

    monkeypatch.setattr(gridsample._ext, "forward", spy)
    x, grid = _pair()
    torch.set_num_threads(1)
    gridsample.grid_sample(x, grid, align_corners=False)
    torch.set_num_threads(2)
    gridsample.grid_sample(x, grid, align_corners=False)
    gnp.grid_sample(x.numpy(), grid.numpy())
    gridsample.set_num_threads(3)
    gridsample.grid_sample(x, grid, align_corners=False)
    gnp.grid_sample(x.numpy(), grid.numpy())
    # torch tensors follow torch.get_num_threads(); NumPy arrays OpenMP's default (0); the
    # override wins for both.
    assert counts == [1, 2, 0, 3, 3]
    with pytest.raises(ValueError):
        gridsample.set_num_threads(-1)
    with pytest.raises(TypeError):
        gridsample.set_num_threads(1.5)


_OVERSUBSCRIPTION = r"""
import os, sys, importlib
for m in sys.argv[1:]:
    importlib.import_module(m)
import torch, gridsample, numpy as np
torch.set_num_threads(2)
x = torch.randn(2, 8, 24, 24, 24); g = torch.rand(2, 20, 20, 20, 3) * 2 - 1
for _ in range(5):
    a = torch.nn.functional.grid_sample(x, g, align_corners=False)   # torch's OpenMP runtime
    b = gridsample.grid_sample(x, g, align_corners=False)            # the library's
    c = gridsample.numpy.grid_sample(x.numpy(), g.numpy())
    assert torch.allclose(a, b, atol=1e-5) and np.array_equal(b.numpy(), c)
maps = open("/proc/self/maps").read()
gomps = sorted({l.split()[-1] for l in maps.splitlines() if "gomp" in l.split()[-1]})
print(len(os.listdir("/proc/self/task")), "|".join(gomps))
"""


@pytest.mark.parametrize("first", ["torch", "gridsample"])
def test_next_to_torch_openmp_runtime(first):
    """Loaded next to torch (PyPI's torch ships its own libgomp), imported before or after it:
    no crash, and the threads stay bounded: each runtime's pool holds at most the cores it was
    given. (Seen 2026-12-01: with PyPI torch 2.15 both libraries share torch's libgomp.so.1,
    which is loaded first under the same soname; 4 threads in all.)"""
    env = dict(os.environ, OMP_NUM_THREADS="2")
    second = "gridsample" if first == "torch" else "torch"
    r = subprocess.run([sys.executable, "-c", _OVERSUBSCRIPTION, first, second], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    threads, gomps = r.stdout.split()
    # the main thread, torch's pool (2 - 1), ours (2 - 1), one spare (e.g. a runtime helper).
    assert int(threads) <= 4, (threads, gomps)
    assert "gomp" in gomps


# NumPy.

@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_numpy_against_torch(nd, mode):
    x, grid = _pair(nd=nd, dtype=torch.float64, seed=nd)
    go = torch.randn((2, 3) + (4,) * nd, dtype=torch.float64)
    xr, gr = x.clone().requires_grad_(), grid.clone().requires_grad_()
    out = gridsample.grid_sample(xr, gr, mode, "border", True)
    out.backward(go)
    o = gnp.grid_sample(x.numpy(), grid.numpy(), mode, "border", True)
    assert np.array_equal(o, out.detach().numpy())
    if mode != "bicubic" or nd == 2:
        assert np.allclose(o, F.grid_sample(x, grid, mode, "border", True).numpy(), rtol=0,
                           atol=1e-12)
    gx, gg = gnp.grid_sample_backward(go.numpy(), x.numpy(), grid.numpy(), mode, "border", True)
    assert np.array_equal(gx, xr.grad.numpy()) and np.array_equal(gg, gr.grad.numpy())
    # channel-last layout: (N, [D,] H, W, C) arrays.
    perm = (0,) + tuple(range(2, nd + 2)) + (1,)
    xl = np.ascontiguousarray(x.numpy().transpose(perm))
    ol = gnp.grid_sample(xl, grid.numpy(), mode, "border", True, layout="channels_last")
    assert ol.shape == o.transpose(perm).shape and np.array_equal(ol, o.transpose(perm))
    gxl, ggl = gnp.grid_sample_backward(np.ascontiguousarray(go.numpy().transpose(perm)), xl,
                                        grid.numpy(), mode, "border", True,
                                        layout="channels_last")
    assert np.array_equal(gxl, gx.transpose(perm)) and np.array_equal(ggl, gg)


def test_numpy_out_and_mask():
    x, grid = _pair(dtype=torch.float32)
    x, grid = x.numpy(), grid.numpy()
    out = np.full((2, 3, 4, 4), 7.0, np.float32)
    r = gnp.grid_sample(x, grid, out=out)
    assert r is out and np.array_equal(out, gnp.grid_sample(x, grid))
    go = np.ones((2, 3, 4, 4), np.float32)
    gx, gg = gnp.grid_sample_backward(go, x, grid, output_mask=(False, True))
    assert gx is None and gg.shape == grid.shape
    gx2, gg2 = gnp.grid_sample_backward(go, x, grid, output_mask=(True, False))
    assert gg2 is None and gx2.shape == x.shape
    bufs = (np.empty_like(x), np.empty_like(grid))
    a, b = gnp.grid_sample_backward(go, x, grid, out=bufs)
    assert a is bufs[0] and b is bufs[1] and np.array_equal(a, gx2) and np.array_equal(b, gg)
    # float16 and strided (non-contiguous, negative-stride) inputs
    h = gnp.grid_sample(x.astype(np.float16)[:, ::-1], grid.astype(np.float16))
    ref = gnp.grid_sample(x.astype(np.float16)[:, ::-1].astype(np.float32),
                          grid.astype(np.float16).astype(np.float32))
    assert h.dtype == np.float16 and np.allclose(h, ref, rtol=2e-3, atol=2e-3)


def test_numpy_errors_write_nothing():
    x, grid = _pair(dtype=torch.float32)
    x, grid = x.numpy(), grid.numpy()
    ro = np.full((2, 3, 4, 4), 7.0, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gnp.grid_sample(x, grid, out=ro)
    # out overlapping an input: the library refuses, before writing.
    buf = np.full(2 * 3 * 5 * 5, 7.0, np.float32)
    xs = buf.reshape(2, 3, 5, 5)
    ov = buf[: 2 * 3 * 4 * 4].reshape(2, 3, 4, 4)
    before = buf.copy()
    with pytest.raises(ValueError, match="overlap"):
        gnp.grid_sample(xs, grid, out=ov)
    assert np.array_equal(buf, before)
    # an out view that maps two elements to one address
    tgt = np.full(64, 7.0, np.float32)
    self_ov = np.lib.stride_tricks.as_strided(tgt, (2, 3, 4, 4), (0, 4, 16, 4), writeable=True)
    with pytest.raises(ValueError):
        gnp.grid_sample(x, grid, out=self_ov)
    assert np.all(tgt == 7.0)
    with pytest.raises(ValueError, match="shape"):
        gnp.grid_sample(x, grid, out=np.empty((2, 3, 4, 5), np.float32))
    with pytest.raises(TypeError):
        gnp.grid_sample(x, grid, out=np.empty((2, 3, 4, 4), np.float64))
    with pytest.raises(TypeError):
        gnp.grid_sample(x.astype(np.int32), grid.astype(np.int32))
    with pytest.raises(TypeError):
        gnp.grid_sample(x.astype(np.complex64), grid.astype(np.complex64))
    with pytest.raises(TypeError):
        gnp.grid_sample(x, grid.astype(np.float64))
    with pytest.raises(ValueError):
        gnp.grid_sample(x[0], grid)
    with pytest.raises(ValueError):
        gnp.grid_sample(x, grid[:1])
    with pytest.raises(ValueError, match="layout"):
        gnp.grid_sample(x, grid, layout="NCWH")

    class OnGpu:
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(TypeError, match="CPU"):
        gnp.grid_sample(OnGpu(), grid)
    with pytest.raises(TypeError, match="CPU"):
        gnp.grid_sample_backward(np.ones((2, 3, 4, 4), np.float32), x, OnGpu())


# The patch switch.

def _count_calls(monkeypatch, name):
    """Wraps gridsample._ext.NAME; the returned list grows by one per call."""
    calls = []
    real = getattr(gridsample._ext, name)

    def spy(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(gridsample._ext, name, spy)
    return calls


def test_patch_unpatch_context(monkeypatch):
    calls = _count_calls(monkeypatch, "forward")
    x, grid = _pair()
    original = F.grid_sample
    F.grid_sample(x, grid, align_corners=False)
    assert calls == []
    gridsample.torch.patch()
    assert gridsample.torch.is_patched() and torch.nn.functional.grid_sample is not original
    F.grid_sample(x, grid, align_corners=False)
    assert calls == [1]
    gridsample.torch.unpatch()
    assert F.grid_sample is original
    with gridsample.torch.patched():
        torch.nn.functional.grid_sample(x, grid, align_corners=False)
        with gridsample.torch.patched():
            pass
        assert gridsample.torch.is_patched()
    assert not gridsample.torch.is_patched() and calls == [1, 1]


class SpatialTransformer(torch.nn.Module):
    """VoxelMorph's SpatialTransformer (voxelmorph/torch/layers.py), as they write it."""

    def __init__(self, size, mode="bilinear"):
        super().__init__()
        self.mode = mode
        vectors = [torch.arange(0, s) for s in size]
        grids = torch.meshgrid(vectors, indexing="ij")
        grid = torch.stack(grids)
        grid = torch.unsqueeze(grid, 0)
        grid = grid.type(torch.FloatTensor)
        self.register_buffer("grid", grid)

    def forward(self, src, flow):
        new_locs = self.grid + flow
        shape = flow.shape[2:]
        for i in range(len(shape)):
            new_locs[:, i, ...] = 2 * (new_locs[:, i, ...] / (shape[i] - 1) - 0.5)
        if len(shape) == 2:
            new_locs = new_locs.permute(0, 2, 3, 1)
            new_locs = new_locs[..., [1, 0]]
        elif len(shape) == 3:
            new_locs = new_locs.permute(0, 2, 3, 4, 1)
            new_locs = new_locs[..., [2, 1, 0]]
        return torch.nn.functional.grid_sample(src, new_locs, align_corners=True, mode=self.mode)


def test_patch_voxelmorph_spatial_transformer(monkeypatch):
    calls = _count_calls(monkeypatch, "backward")
    g = torch.Generator().manual_seed(3)
    st = SpatialTransformer((12, 10, 14))
    src = torch.randn(1, 2, 12, 10, 14, generator=g)
    flow = (torch.randn(1, 3, 12, 10, 14, generator=g) * 1.5).requires_grad_()
    ref = st(src, flow)
    (gref,) = torch.autograd.grad(ref.square().sum(), flow)
    with gridsample.torch.patched():
        out = st(src, flow)
        (gout,) = torch.autograd.grad(out.square().sum(), flow)
    assert calls == [1]
    assert torch.allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert torch.allclose(gout, gref, rtol=1e-4, atol=1e-4)


def test_patch_monai_rand3delastic(monkeypatch):
    monai = pytest.importorskip("monai")
    from monai.transforms import Rand3DElastic

    calls = _count_calls(monkeypatch, "forward")
    img = torch.rand(2, 20, 24, 16)

    def run():
        t = Rand3DElastic(sigma_range=(5, 7), magnitude_range=(50, 110), prob=1.0,
                          rotate_range=(0.3, 0.3, 0.3), padding_mode="border", mode="bilinear")
        t.set_random_state(seed=11)
        return t(img)

    ref = run()
    assert calls == []
    with gridsample.torch.patched():
        out = run()
    assert len(calls) >= 1, f"monai {monai.__version__} did not reach grid_sample"
    assert torch.allclose(torch.as_tensor(out), torch.as_tensor(ref), rtol=1e-5, atol=1e-5)


_EMPTY_GRID = r"""
import sys, numpy as np, gridsample._ext as ext
nd, n, c = map(int, sys.argv[1:4])
x = np.random.rand(n, c, *(4,) * nd).astype(np.float32)
g = np.random.rand(n, 0, *(3,) * (nd - 1), nd).astype(np.float32)
go = np.zeros((n, c) + g.shape[1:-1], np.float32)
ig = np.full(x.shape, 7.0, np.float32)
ext.backward(go, x, g, ig, None, 0, 0, False, False, 2)
assert not ig.any(), "inputGrad not zeroed"
"""


@pytest.mark.parametrize("nd,n,c", [(2, 1, 2), (2, 3, 2), (3, 3, 0), (3, 1, 0)])
def test_library_empty_grid_threads(nd, n, c):
    """The extension called directly with 2 threads, in a child process (it crashed): an empty
    output grid zeroes a requested inputGrad. The library's cpu:fast backward left it unzeroed
    or crashed until 5695201 (found here first, 2026-12-01)."""
    r = subprocess.run([sys.executable, "-c", _EMPTY_GRID, str(nd), str(n), str(c)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-300:])


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_empty_grid_any_threads(threads):
    """Through the package: zeros, never a crash, any thread count."""
    gridsample.set_num_threads(threads)
    for nd in (2, 3):
        for n in (1, 3):
            for c in (0, 2):
                x = torch.randn((n, c) + (4,) * nd, requires_grad=True)
                g = torch.rand((n, 0) + (3,) * (nd - 1) + (nd,), requires_grad=True)
                out = gridsample.grid_sample(x, g, align_corners=False)
                out.sum().backward()
                assert out.shape == (n, c, 0) + (3,) * (nd - 1)
                assert torch.equal(x.grad, torch.zeros_like(x))
                gx, gg = gnp.grid_sample_backward(np.zeros(out.shape, np.float32),
                                                  x.detach().numpy(), g.detach().numpy())
                assert not gx.any() and gg.shape == g.shape


def test_python_threads_at_once():
    """Calls from several Python threads at once (the GIL is released while a kernel runs, and
    each OS thread sets its own run thread count): the same results as one at a time."""
    from concurrent.futures import ThreadPoolExecutor

    cases = [_pair(nd=3, n=2, c=4, seed=s) for s in range(6)]
    serial = [gridsample.grid_sample(x, g, "bilinear", "border", False) for x, g in cases]

    def work(i):
        gridsample.set_num_threads(0)
        x, g = cases[i % len(cases)]
        if i % 2:
            return gnp.grid_sample(x.numpy(), g.numpy(), "bilinear", "border", False)
        return gridsample.grid_sample(x, g, "bilinear", "border", False).numpy()

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(24)))
    for i, r in enumerate(results):
        assert np.array_equal(r, serial[i % len(cases)].numpy())
