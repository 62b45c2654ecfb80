"""The NumPy layer: grid sampling and its gradients on NumPy arrays.

    out = gridsample.numpy.grid_sample(x, grid, mode="bilinear", padding_mode="zeros",
                                       align_corners=False, layout="channels_first", out=None)
    gx, ggrid = gridsample.numpy.grid_sample_backward(grad_out, x, grid, ...,
                                                      output_mask=(True, True))

x is (N, C, [D,] H, W) with layout="channels_first" (the default) or (N, [D,] H, W, C) with
layout="channels_last"; grid is (N, [Do,] Ho, Wo, 2 or 3). Results are new arrays in x's layout
(or the arrays given as out=). Arrays are read in place, whatever their strides. No overrides of
the thread count: all cores (OpenMP's default, so OMP_NUM_THREADS if set);
gridsample.set_num_threads(n) overrides.
"""

import numpy as np

from . import _common, _ext

__all__ = ["grid_sample", "grid_sample_backward"]

_LAYOUTS = {"channels_first": False, "channels_last": True, "NCHW": False, "NCDHW": False,
            "NHWC": True, "NDHWC": True}
_KDLCPU = 1


def _layout(layout):
    try:
        return _LAYOUTS[layout]
    except (KeyError, TypeError):
        raise ValueError("gridsample.numpy: expected layout to be 'channels_first' or "
                         f"'channels_last', but got: '{layout}'") from None


def _array(a, name):
    """a as an ndarray without a copy where NumPy can read it in place."""
    if not isinstance(a, np.ndarray):
        dev = getattr(a, "__dlpack_device__", None)
        if dev is not None:
            kind = dev()[0]
            if int(kind) != _KDLCPU:
                raise TypeError(f"gridsample.numpy: {name} is not in CPU memory (DLPack device "
                                f"{tuple(int(v) for v in dev())}); the NumPy API takes CPU "
                                "arrays (use gridsample.grid_sample for torch tensors)")
        a = np.asarray(a)
    if a.dtype.kind not in "fiucb":
        raise _common.GridSampleTypeError(
            f"gridsample.numpy: {name} has dtype {a.dtype}; expected float16, float32 or float64")
    # Negative or non-element strides: the library addresses elements from the first one.
    if a.size > 0 and any(s < 0 or s % a.itemsize for s in a.strides):
        a = np.ascontiguousarray(a)
    return a


def _out(out, shape, dtype, name):
    if out is None:
        return np.empty(shape, dtype)
    if not isinstance(out, np.ndarray):
        raise TypeError(f"gridsample.numpy: {name} must be a numpy.ndarray, got "
                        f"{type(out).__name__}")
    if not out.flags.writeable:
        raise ValueError(f"gridsample.numpy: {name} is read-only")
    if out.shape != tuple(shape):
        raise ValueError(f"gridsample.numpy: {name} has shape {out.shape}; expected "
                         f"{tuple(shape)}")
    if out.dtype != dtype:
        raise _common.GridSampleTypeError(f"gridsample.numpy: {name} has dtype {out.dtype}; "
                                          f"expected {dtype}")
    if out.size > 0 and any(s < 0 or s % out.itemsize for s in out.strides):
        raise ValueError(f"gridsample.numpy: {name} has negative or unaligned strides "
                         f"{out.strides}")
    return out


def _out_shape(x, grid, channel_last):
    if x.ndim not in (4, 5) or grid.ndim != x.ndim:
        raise _common.GridSampleError(
            f"gridsample.numpy: expected x and grid of rank 4 (2D) or 5 (3D), got x with shape "
            f"{x.shape} and grid with shape {grid.shape}")
    spatial = tuple(grid.shape[1:-1])
    n = x.shape[0]
    c = x.shape[-1] if channel_last else x.shape[1]
    return (n,) + spatial + (c,) if channel_last else (n, c) + spatial


def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False, *,
                layout="channels_first", out=None):
    """Samples x at grid (torch.nn.functional.grid_sample's semantics); returns out."""
    m, p = _common.mode_index(mode, padding_mode, "gridsample.numpy.grid_sample()")
    cl = _layout(layout)
    x, grid = _array(x, "x"), _array(grid, "grid")
    o = _out(out, _out_shape(x, grid, cl), x.dtype, "out")
    _ext.forward(x, grid, o, m, p, bool(align_corners), cl, _common._override)
    return o


def grid_sample_backward(grad_out, x, grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False, *, layout="channels_first",
                         output_mask=(True, True), out=None):
    """The gradients of grid_sample with respect to x and grid, given grad_out (the gradient
    with respect to its result). output_mask says which to compute; returns
    (x_grad or None, grid_grad or None). out=(x_grad, grid_grad) writes into given arrays."""
    m, p = _common.mode_index(mode, padding_mode, "gridsample.numpy.grid_sample_backward()")
    cl = _layout(layout)
    grad_out, x, grid = _array(grad_out, "grad_out"), _array(x, "x"), _array(grid, "grid")
    if len(output_mask) != 2:
        raise ValueError(f"gridsample.numpy: output_mask must have 2 entries, got {output_mask}")
    want_x, want_grid = bool(output_mask[0]), bool(output_mask[1])
    out_x, out_grid = (None, None) if out is None else out
    gx = _out(out_x, x.shape, x.dtype, "out[0]") if want_x else None
    gg = _out(out_grid, grid.shape, grid.dtype, "out[1]") if want_grid else None
    if want_x or want_grid:
        _out_shape(x, grid, cl)
        _ext.backward(grad_out, x, grid, gx, gg, m, p, bool(align_corners), cl,
                      _common._override)
    return gx, gg
