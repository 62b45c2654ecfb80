"""The PyTorch layer: gridsample.grid_sample with autograd, and the patch switch.

On torch >= 2.4 the operator is registered with torch.library.custom_op (gridsample::grid_sample
and gridsample::grid_sample_backward) with fake (meta) functions and autograd, so that
torch.compile(fullgraph=True) and torch.library.opcheck work; plain tensors in eager mode take
a shorter path to the same functions (NOTE [ Eager path ]): a torch.autograd.Function when a
gradient is needed, else a direct call. On older torch there is only that path. Either way one
backward call computes both gradients, with the outputMask taken from which inputs need a
gradient. Double backward raises.
"""

import contextlib
import warnings

import torch
import torch.nn.functional

from . import _common, _ext

__all__ = ["grid_sample", "patch", "unpatch", "patched", "is_patched"]

# torch's own function, captured before any patch; non-CPU tensors go here unchanged.
_torch_grid_sample = torch.nn.functional.grid_sample

_WHERE = "nn.functional.grid_sample()"


def _threads(grid):
    return _common._override or torch.get_num_threads()


# A DLPack capsule made by torch's C function: the same zero-copy export as Tensor.__dlpack__,
# without its Python-level checks (it costs 0.2-0.6 us where __dlpack__ costs 1-2.3 us), and it
# accepts tensors that require grad (the library only reads them, or writes our own outputs).
_dl = torch.utils.dlpack.to_dlpack


def _empty_out(input, grid):
    # As PyTorch's CPU kernels: a contiguous output.
    return input.new_empty(input.shape[:2] + grid.shape[1:-1])


def _forward_impl(input, grid, interpolation, padding, align_corners):
    out = _empty_out(input, grid)
    _ext.forward(_dl(input), _dl(grid), _dl(out), interpolation, padding, align_corners, False,
                 _threads(grid))
    return out


def _backward_impl(grad_output, input, grid, interpolation, padding, align_corners, need_input,
                   need_grid):
    # As PyTorch: inputGrad in input's memory format, gridGrad contiguous.
    ig = torch.empty_like(input) if need_input else None
    gg = torch.empty_like(grid, memory_format=torch.contiguous_format) if need_grid else None
    if need_input or need_grid:
        _ext.backward(_dl(grad_output), _dl(input), _dl(grid),
                      None if ig is None else _dl(ig), None if gg is None else _dl(gg),
                      interpolation, padding, align_corners, False, _threads(grid))
    return ig, gg


_DOUBLE_BACKWARD = ("gridsample: double backward (a gradient of grid_sample's gradient) is not "
                    "implemented; use torch.nn.functional.grid_sample where second derivatives "
                    "are needed")

_HAS_CUSTOM_OP = all(hasattr(torch.library, a) for a in
                     ("custom_op", "register_fake", "register_autograd", "opcheck"))
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


class _NoDoubleBackward(torch.autograd.Function):
    """Passes the gradients through, connected to every tensor they depend on (gradOutput,
    input, grid), and raises if a second derivative reaches it. (once_differentiable alone
    connects them to gradOutput only, so d(inputGrad)/d(grid) would silently be 0.)"""

    @staticmethod
    def forward(ctx, n, *tensors):
        return tuple(t.view_as(t) for t in tensors[:n])

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_DOUBLE_BACKWARD)


class _GridSample(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, grid, interpolation, padding, align_corners):
        ctx.save_for_backward(input, grid)
        ctx.args = (interpolation, padding, align_corners)
        return _forward_impl(input, grid, interpolation, padding, align_corners)

    @staticmethod
    def backward(ctx, grad_output):
        input, grid = ctx.saved_tensors
        need_input, need_grid = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        with torch.no_grad():
            ig, gg = _backward_impl(grad_output, input, grid, *ctx.args, need_input,
                                    need_grid)
        if torch.is_grad_enabled() and any(
                t.requires_grad for t in (grad_output, input, grid)):  # create_graph=True
            grads = [t for t in (ig, gg) if t is not None]
            grads = list(_NoDoubleBackward.apply(len(grads), *grads, grad_output, input,
                                                 grid))
            ig = grads.pop(0) if ig is not None else None
            gg = grads.pop(0) if gg is not None else None
        return ig, gg, None, None, None


if _HAS_CUSTOM_OP:
    from torch import Tensor

    @torch.library.custom_op("gridsample::grid_sample", mutates_args=(), device_types="cpu")
    def _op(input: Tensor, grid: Tensor, interpolation: int, padding: int,
            align_corners: bool) -> Tensor:
        return _forward_impl(input, grid, interpolation, padding, align_corners)

    @_op.register_fake
    def _(input, grid, interpolation, padding, align_corners):
        return _empty_out(input, grid)

    @torch.library.custom_op("gridsample::grid_sample_backward", mutates_args=(),
                             device_types="cpu")
    def _backward_op(grad_output: Tensor, input: Tensor, grid: Tensor, interpolation: int,
                     padding: int, align_corners: bool, need_input: bool,
                     need_grid: bool) -> tuple[Tensor, Tensor]:
        ig, gg = _backward_impl(grad_output, input, grid, interpolation, padding, align_corners,
                                need_input, need_grid)
        # A custom op returns tensors, never None: an empty one for a gradient not asked for.
        return (ig if ig is not None else input.new_empty(0),
                gg if gg is not None else grid.new_empty(0))

    @_backward_op.register_fake
    def _(grad_output, input, grid, interpolation, padding, align_corners, need_input, need_grid):
        return (torch.empty_like(input) if need_input else input.new_empty(0),
                torch.empty_like(grid, memory_format=torch.contiguous_format) if need_grid
                else grid.new_empty(0))

    def _setup_context(ctx, inputs, output):
        input, grid, interpolation, padding, align_corners = inputs
        ctx.save_for_backward(input, grid)
        ctx.args = (interpolation, padding, align_corners)

    def _backward(ctx, grad_output):
        input, grid = ctx.saved_tensors
        need_input, need_grid = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        ig, gg = _backward_op(grad_output, input, grid, *ctx.args, need_input, need_grid)
        return (ig if need_input else None, gg if need_grid else None, None, None, None)

    _op.register_autograd(_backward, setup_context=_setup_context)

    def _no_double_backward(ctx, *grads):
        raise RuntimeError(_DOUBLE_BACKWARD)

    _backward_op.register_autograd(_no_double_backward,
                                   setup_context=lambda ctx, inputs, output: None)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """torch.nn.functional.grid_sample, computed by gridsample for CPU tensors.

    Same signature, semantics, warnings and errors; in addition mode="bicubic" works for 5-D
    (3D) inputs. Tensors on any other device go to torch.nn.functional.grid_sample unchanged.
    float16, bfloat16, float32 and float64; channels_last(_3d) and strided views are read in place.
    """
    if torch.overrides.has_torch_function_variadic(input, grid):
        return torch.overrides.handle_torch_function(
            grid_sample, (input, grid), input, grid, mode=mode, padding_mode=padding_mode,
            align_corners=align_corners)
    if (not isinstance(input, torch.Tensor) or not isinstance(grid, torch.Tensor)
            or not input.is_cpu or not grid.is_cpu):
        # other devices (and non-tensors, for torch's own TypeError)
        return _torch_grid_sample(input, grid, mode=mode, padding_mode=padding_mode,
                                  align_corners=align_corners)
    interpolation, padding = _common.mode_index(mode, padding_mode, _WHERE)
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed "
            "to align_corners=False since 1.3.0. Please specify "
            "align_corners=True if the old behavior is desired. "
            "See the documentation of grid_sample for details.")
        align_corners = False
    align_corners = bool(align_corners)
    # NOTE [ Eager path ]: plain tensors outside torch.compile skip the dispatcher: the custom
    # op costs ~18 us per call on torch 2.15 and its autograd wrapper far more (issue 13's
    # overhead target is 20 us). The custom op (same functions underneath) serves torch.compile,
    # fake tensors and tensor subclasses.
    if _HAS_CUSTOM_OP and (type(input) is not torch.Tensor or type(grid) is not torch.Tensor
                           or _is_compiling()):
        return _op(input, grid, interpolation, padding, align_corners)
    if torch.is_grad_enabled() and (input.requires_grad or grid.requires_grad):
        return _GridSample.apply(input, grid, interpolation, padding, align_corners)
    return _forward_impl(input, grid, interpolation, padding, align_corners)


# The patch switch.

def _patched_grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    return grid_sample(input, grid, mode, padding_mode, align_corners)


_patched_grid_sample.__doc__ = _torch_grid_sample.__doc__


def patch():
    """Routes CPU calls of torch.nn.functional.grid_sample to gridsample (process-wide).

    Code that looks the function up when it calls it (F.grid_sample(...),
    torch.nn.functional.grid_sample(...)) is routed; a reference taken before patch() is not.
    Other devices still reach PyTorch's kernels."""
    torch.nn.functional.grid_sample = _patched_grid_sample


def unpatch():
    """Restores torch.nn.functional.grid_sample."""
    torch.nn.functional.grid_sample = _torch_grid_sample


def is_patched():
    return torch.nn.functional.grid_sample is _patched_grid_sample


@contextlib.contextmanager
def patched():
    """`with gridsample.torch.patched(): ...` patches inside the block, then restores the state
    from before it (so blocks nest)."""
    before = torch.nn.functional.grid_sample
    patch()
    try:
        yield
    finally:
        torch.nn.functional.grid_sample = before
