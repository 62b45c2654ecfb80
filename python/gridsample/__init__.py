"""gridsample: PyTorch's grid_sample (2D and 3D, forward and backward) on the CPU.

    import gridsample
    out = gridsample.grid_sample(input, grid, align_corners=False)   # torch tensors, autograd
    out = gridsample.numpy.grid_sample(x, grid)                       # NumPy arrays
    gridsample.torch.patch()        # route torch.nn.functional.grid_sample's CPU calls here

The extension (gridsample._ext) is a thin binding over the library's aclnn C API; this package
adds the framework layers in pure Python. torch is imported only when a torch function is used.
"""

from ._common import (GridSampleError, GridSampleTypeError, get_num_threads,  # noqa: F401
                      release_workspace, set_num_threads)

__version__ = "0.1.0"
__all__ = ["grid_sample", "set_num_threads", "get_num_threads", "release_workspace",
           "GridSampleError", "GridSampleTypeError", "numpy", "torch"]


def __getattr__(name):
    # Lazy: `import gridsample` must not import torch (NumPy users may not have it).
    import importlib
    if name == "grid_sample":
        fn = importlib.import_module(".torch", __name__).grid_sample
        globals()["grid_sample"] = fn
        return fn
    if name in ("torch", "numpy"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'gridsample' has no attribute '{name}'")
