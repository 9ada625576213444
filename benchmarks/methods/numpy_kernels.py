"""Plain numpy computations on the in-memory ``X``: the hardware's reference times."""

from __future__ import annotations

import numpy as np

from benchmarks.methods.base import Fit, Method

__all__ = ["NumpyKernel"]


def _sum(X):
    return X.sum()


def _matvec(X):
    return X @ np.ones(X.shape[1])


def _gram(X):
    return X.T @ X


class NumpyKernel(Method):
    """One numpy expression on ``X``, e.g. ``X.sum()`` (one read of ``X`` from memory).

    Parameters
    ----------
    name : str
        Registry key.
    label : str
        The expression, as shown in tables.
    function : callable
        ``X -> result``.
    threads : int, optional
        BLAS threads (default: as many as the cluster has).
    """

    library = "numpy"
    kind = "kernel"
    where = "memory"

    def __init__(self, name, label, function, threads=None):
        self.name = name
        self.label = label
        self.function = function
        self.threads = threads

    def run(self, data, problem, tol):
        self.function(data.X_local)
        return Fit()


def methods():
    """The numpy kernels of the registry."""
    return [
        NumpyKernel("numpy-sum", "numpy X.sum()", _sum),
        NumpyKernel("numpy-matvec", "numpy X @ v", _matvec),
        NumpyKernel("numpy-gram", "numpy X.T @ X", _gram),
        NumpyKernel("numpy-gram-1thread", "numpy X.T @ X (1 thread)", _gram, threads=1),
    ]
