"""Vectors that keep stochastic steps on sparse rows cheap.

A mini-batch of sparse rows touches few columns, so its gradient travels as a
:class:`SparseGradient` ``(indices, values)`` while that is smaller than the dense
vector.  Local SGD keeps its coefficients as a :class:`ScaledVector`, so that an L2
shrink costs O(1) and a step O(non-zeros of the mini-batch) (the lazy L2 update).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SparseGradient", "ScaledVector", "dense_gradient", "column_gradient",
           "sparse_or_dense"]


@dataclass
class SparseGradient:
    """A gradient vector that is zero outside ``indices``.

    The gradient of a mini-batch of sparse rows is non-zero only on the columns those rows
    use (and the intercept).  As ``(indices, values)`` it costs 12 bytes per touched entry
    (16 with 64-bit indices) instead of 8 bytes per parameter; :func:`batch_loss_grad`
    returns one only when that is smaller.  Adding two merges their indices (and gives a
    dense vector once that is smaller); adding a dense vector gives a dense vector.  So
    :class:`~daskglm.compute.kernels.Stats` and the engines' tree sums handle both kinds alike,
    and the sums are exactly those of the dense vectors.

    Attributes
    ----------
    size : int
        Length of the dense vector.
    indices : ndarray of int
        Sorted, distinct positions of the stored entries.
    values : ndarray of float
    """

    size: int
    indices: np.ndarray
    values: np.ndarray

    #: ``ndarray + SparseGradient`` defers to :meth:`__radd__` instead of broadcasting.
    __array_ufunc__ = None

    @classmethod
    def zeros(cls, size):
        """The zero vector of length ``size``, with no stored entries."""
        return cls(int(size), np.zeros(0, dtype=_index_dtype(size)), np.zeros(0))

    @property
    def nbytes(self):
        """Bytes of the stored indices and values."""
        return int(self.indices.nbytes + self.values.nbytes)

    def toarray(self):
        """The dense vector."""
        dense = np.zeros(self.size)
        dense[self.indices] = self.values
        return dense

    def __add__(self, other):
        if isinstance(other, SparseGradient):
            if other.size != self.size:
                raise ValueError(f"Cannot add gradients of sizes {self.size} and {other.size}.")
            indices = np.union1d(self.indices, other.indices)
            values = np.zeros(indices.shape[0])
            values[np.searchsorted(indices, self.indices)] += self.values
            values[np.searchsorted(indices, other.indices)] += other.values
            return sparse_or_dense(self.size, indices, values)
        dense = np.array(other, dtype=float)  # a copy: the operands are left as they were
        dense[self.indices] += self.values
        return dense

    __radd__ = __add__


def _index_dtype(size):
    return np.int32 if size <= np.iinfo(np.int32).max else np.int64


def sparse_or_dense(size, indices, values):
    """A :class:`SparseGradient` of ``(indices, values)`` or the dense vector, whichever
    takes fewer bytes.

    Parameters
    ----------
    size : int
        The length of the vector.
    indices : ndarray of int
        The positions of its entries that may be nonzero, without repeats.
    values : ndarray of float64
        Its entries at ``indices``; the others are zero.

    Returns
    -------
    SparseGradient or ndarray of float64
    """
    sparse = SparseGradient(int(size), indices.astype(_index_dtype(size), copy=False), values)
    return sparse if sparse.nbytes < 8 * size else sparse.toarray()


def dense_gradient(grad):
    """``grad`` as a dense ndarray, whether it is one already or a :class:`SparseGradient`."""
    return grad.toarray() if isinstance(grad, SparseGradient) else grad


def column_gradient(X, r):
    """``X.T @ r`` for a CSR matrix, on the columns ``X`` uses only: ``(columns, values)``.

    Costs O(non-zeros of ``X``), however many columns ``X`` has; ``columns`` is sorted.
    Each value is summed over the rows in order, as ``X.T @ r`` sums it.
    """
    columns, position = np.unique(X.indices, return_inverse=True)
    contributions = X.data * np.repeat(r, np.diff(X.indptr))
    return columns, np.bincount(position, weights=contributions, minlength=columns.shape[0])


# the lazy L2 update of sparse local SGD ------------------------------------------------------
class ScaledVector:
    """A vector held as ``scale * values``: scaling it costs O(1), changing k entries O(k).

    An L2 step multiplies every coefficient by ``1 - rate * alpha``, which here only
    updates ``scale``; a sparse gradient step changes the entries of the columns the
    mini-batch uses.  When ``scale`` gets small it is folded into ``values`` (an O(d)
    pass, rare) so that the division in :meth:`add_at` stays accurate.

    Parameters
    ----------
    vector : array-like
        The initial value (copied).
    """

    #: ``scale`` is folded into ``values`` when its magnitude falls below this.
    RESCALE_BELOW = 1e-9

    def __init__(self, vector):
        self.values = np.array(vector, dtype=float)
        self.scale = 1.0
        self._sumsq = float(self.values @ self.values)

    def scale_by(self, factor):
        """Multiply the vector by ``factor``."""
        self.scale *= factor
        if abs(self.scale) < self.RESCALE_BELOW:
            self.values *= self.scale
            self.scale = 1.0
            self._sumsq = float(self.values @ self.values)

    def add_at(self, indices, increments):
        """Add ``increments`` to the entries at ``indices`` (distinct)."""
        old = self.values[indices]
        new = old + increments / self.scale
        self.values[indices] = new
        self._sumsq = max(self._sumsq + float(new @ new - old @ old), 0.0)

    def sqnorm(self):
        """The squared Euclidean norm, kept up to date in O(1) per change (up to round-off)."""
        return self.scale * self.scale * self._sumsq

    def dot(self, X):
        """``X @ vector`` as a flat ndarray."""
        return self.scale * np.asarray(X @ self.values).ravel()

    def toarray(self):
        """The vector as an ndarray."""
        return self.scale * self.values
