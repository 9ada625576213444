"""Array backends: where a partition's arrays live, and moving results back to the driver.

Kernels run on the arrays of a partition as they are: numpy (and scipy sparse) on the
CPU, CuPy on a GPU.  Each kernel asks :func:`array_module` for the module of its partition
and allocates its accumulators there; numpy's own functions and ufuncs dispatch to CuPy
for CuPy arrays (NEP 13 and 18), so most arithmetic is written once.  What a kernel
returns to the driver (sums of a few vectors) is moved to numpy with :func:`to_host`.
numpy stays the fast path: for numpy arrays every call here is the identity.
"""

from __future__ import annotations

import numpy as np

__all__ = ["array_module", "is_device", "to_host"]


def is_device(array) -> bool:
    """Whether ``array`` is a CuPy array (dense or ``cupyx.scipy.sparse``)."""
    return type(array).__module__.split(".")[0] in ("cupy", "cupyx")


def array_module(array):
    """``cupy`` for CuPy arrays, ``numpy`` for everything else."""
    if is_device(array):
        import cupy

        return cupy
    return np


def to_host(value):
    """``value`` with device arrays copied to numpy (numbers and numpy arrays unchanged)."""
    if is_device(value):
        return value.get()
    return value
