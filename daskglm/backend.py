"""Array backends: where a partition's arrays live, and moving results back to the driver.

Kernels run on the arrays of a partition as they are: numpy (and scipy sparse) on the
CPU, CuPy (and ``cupyx.scipy.sparse``) on a GPU, or any library of the Python array API
standard.  The model functions and the kernels' general path are written against the
namespace that :func:`namespace` returns (numpy itself, ``array-api-compat``'s view of
CuPy, or the array's own standard namespace), so one piece of code serves every library.
numpy stays the fast path: :func:`namespace` recognises numpy arrays first, the compiled
kernels of :mod:`daskglm.compute.blocked` take numpy partitions before the general path
is reached, and where numpy has a faster spelling than the standard (``out=`` buffers,
``np.dot``) the code asks :func:`is_numpy_namespace`.

:func:`array_module` is the older seam, ``numpy`` or ``cupy`` itself, for code that relies
on numpy's dispatch to CuPy (NEP 13 and 18).  What a kernel returns to the driver (sums of
a few vectors) is moved to numpy with :func:`to_host`; for numpy every call here is the
identity.
"""

from __future__ import annotations

import array_api_compat
import numpy as np
import scipy.sparse as sp

if hasattr(np, "astype"):  # numpy >= 2.1: its own namespace follows the standard
    numpy_namespace = np
else:  # pragma: no cover - older numpy, through array-api-compat's wrappers
    import array_api_compat.numpy as numpy_namespace  # type: ignore[no-redef]

__all__ = [
    "array_module", "is_device", "to_host", "namespace", "is_numpy_namespace",
    "is_device_sparse", "is_sparse", "from_host", "numpy_namespace",
]


def is_device(array) -> bool:
    """Whether ``array`` is a CuPy array (dense or ``cupyx.scipy.sparse``)."""
    return type(array).__module__.split(".")[0] in ("cupy", "cupyx")


def is_device_sparse(array) -> bool:
    """Whether ``array`` is a ``cupyx.scipy.sparse`` matrix."""
    return type(array).__module__.startswith("cupyx.scipy.sparse")


def is_sparse(array) -> bool:
    """Whether ``array`` is a scipy or ``cupyx.scipy.sparse`` matrix (their CSR matrices
    share ``data``, ``indices``, ``indptr``, ``multiply`` and ``toarray``)."""
    return sp.issparse(array) or is_device_sparse(array)


def array_module(array):
    """``cupy`` for CuPy arrays, ``numpy`` for everything else."""
    if is_device(array):
        import cupy

        return cupy
    return np


def namespace(array):
    """The array API namespace of ``array``.

    numpy arrays, numpy scalars, Python numbers, None and scipy sparse matrices give
    numpy (itself from numpy 2.1 on, whose main namespace follows the standard, with no
    wrapper to slow it; ``array_api_compat.numpy`` before); CuPy arrays and ``cupyx.scipy.sparse`` matrices
    ``array_api_compat.cupy``; any other array its own standard namespace; anything else
    (a list) numpy.
    """
    if type(array) is np.ndarray:  # the common case first: this is called per row block
        return numpy_namespace
    if isinstance(array, (np.ndarray, np.generic, int, float)) or array is None:
        return numpy_namespace
    if sp.issparse(array):
        return numpy_namespace
    if is_device_sparse(array):
        import array_api_compat.cupy as cupy_namespace

        return cupy_namespace
    try:
        return array_api_compat.array_namespace(array)
    except TypeError:  # lists and other sequences: numpy, as np.asarray would take them
        return numpy_namespace


def is_numpy_namespace(xp) -> bool:
    """Whether ``xp`` is numpy's namespace (the compiled and ``out=`` fast paths apply)."""
    return xp is numpy_namespace or xp is np or xp is getattr(
        array_api_compat, "numpy", None)


def to_host(value):
    """``value`` as numpy: numbers and numpy arrays unchanged, device arrays copied,
    other standard arrays read through DLPack."""
    if value is None or isinstance(value, (np.ndarray, np.generic, int, float)):
        return value
    if is_device(value):
        return value.get()
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    return value


def from_host(value, like):
    """The numpy array ``value`` as an array of ``like``'s namespace and device."""
    xp = namespace(like)
    if is_numpy_namespace(xp):
        return value
    if is_device(like):  # CuPy's current device (sparse matrices name no device)
        return xp.asarray(value)
    return xp.asarray(value, device=array_api_compat.device(like))
