"""What the torch and NumPy layers share: exception types, mode names, the thread override."""

from . import _ext


class GridSampleError(ValueError, RuntimeError):
    """An argument the library rejects (shapes, ranks, layouts, overlapping outputs, ...).

    Both a ValueError (what NumPy users expect) and a RuntimeError (what
    torch.nn.functional.grid_sample raises for the same mistakes). The message is the library's
    (aclGetRecentErrMsg)."""


class GridSampleTypeError(TypeError, RuntimeError):
    """A dtype the library rejects (not float16/bfloat16/float32/float64, or dtypes that differ).

    Both a TypeError and a RuntimeError (what torch raises for the same mistakes)."""


_ext.set_error_types(GridSampleError, GridSampleTypeError)

MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}

# 0: no override (torch tensors follow torch.get_num_threads(); NumPy arrays use OpenMP's
# default, OMP_NUM_THREADS or all cores). Process-wide, read on every call.
_override = 0


def set_num_threads(n):
    """Sets the number of threads every later gridsample call uses (0: back to the defaults).

    Results are bit-identical for any thread count."""
    global _override
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"gridsample.set_num_threads(): expected an int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"gridsample.set_num_threads(): expected n >= 0, got {n}")
    _override = n


def get_num_threads():
    """The override set by set_num_threads (0 when none)."""
    return _override


def mode_index(mode, padding_mode, where):
    try:
        m = MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'") from None
    try:
        p = PADDINGS[padding_mode]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'") from None
    return m, p


def release_workspace():
    """Frees the workspace the calling thread keeps between calls.

    Each thread keeps the largest workspace its calls have needed (up to tens of MB for a large
    backward), so that the next call neither allocates nor page-faults it again; this returns
    that memory. The next call allocates one again."""
    _ext.release_workspace()
