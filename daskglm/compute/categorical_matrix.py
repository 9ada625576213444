"""A table partition's features as numeric columns and level codes: the categorical block.

A table's features are its numeric columns, then one column per level of each
categorical column (:mod:`daskglm.estimators.categorical`).  A row has one 1 among each
categorical column's features at most, so those columns need not be stored as values:
:class:`CategoricalMatrix` keeps the numeric columns as a dense array and, for each
categorical column, each row's feature (an integer, -1 when the row's level has none).
That is 8 bytes per numeric value and 4 per categorical value, where CSR takes 12 per
stored value, and its products cost a dense product plus one gather or scatter per
categorical value: the compiled loops of :mod:`.fused_sparse_loops` (``fused_categorical_rows``,
``fused_categorical_hessian_rows``) and :mod:`.moment_loops` read it.

It is the partition layout of the fits whose kernels read it (the gradient, the Hessian
and the validation round's, :data:`daskglm.estimators.categorical.BLOCK_SOLVERS`); any
other kernel reads its CSR matrix (:meth:`CategoricalMatrix.kept_csr`, the same
features, made once and then kept beside the block: a multinomial fit of numeric
labels, whose classes the validation round finds after the layout is chosen, reads it
in every round).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["CategoricalMatrix", "is_categorical_matrix", "categorical_moments"]


class CategoricalMatrix:
    """Dense numeric columns followed by one-hot categorical columns kept as codes.

    Parameters
    ----------
    numeric : ndarray of shape (n, p), float32 or float64
        The first ``p`` features.
    columns : ndarray of shape (n, k), int32
        For each of ``k`` categorical columns, each row's feature: in ``[p, n_features)``,
        or -1 when its level has no feature (a reference level dropped, or a level not
        seen at fit).  Each categorical column's features come after the previous one's.
    n_features : int
        The number of features.
    """

    ndim = 2
    format = "categorical"

    def __init__(self, numeric, columns, n_features):
        self.numeric = numeric
        self.columns = columns
        self.n_features = int(n_features)
        self._csr = None

    def __getstate__(self):
        return {**self.__dict__, "_csr": None}  # the kept CSR matrix is not sent

    @property
    def shape(self):
        return (self.numeric.shape[0], self.n_features)

    @property
    def dtype(self):
        return self.numeric.dtype

    @property
    def nbytes(self):
        return int(self.numeric.nbytes + self.columns.nbytes)

    def __len__(self):
        return self.numeric.shape[0]

    def __repr__(self):
        n, d = self.shape
        return (f"<CategoricalMatrix {n} x {d}: {self.numeric.shape[1]} numeric columns, "
                f"{self.columns.shape[1]} categorical, {self.dtype}>")

    def __getitem__(self, key):
        """Rows: ``X[rows]`` or ``X[rows, :]`` (a slice, integers or a boolean mask); of
        the columns, all of them or none (``X[:0, :0]``, Dask's empty meta)."""
        rows, columns = (key[0], key[1:]) if isinstance(key, tuple) else (key, ())
        if isinstance(rows, (int, np.integer)):
            n = self.shape[0]
            if not -n <= rows < n:
                raise IndexError(f"Row {rows} of a CategoricalMatrix of {n} rows.")
            rows = slice(rows % n, rows % n + 1)
        numeric, codes = self.numeric[rows], self.columns[rows]
        for k in columns:
            if isinstance(k, slice) and not len(range(*k.indices(self.n_features))):
                return CategoricalMatrix(numeric[:, :0], codes[:, :0], 0)
            if k is not Ellipsis and k != slice(None):
                raise IndexError("A CategoricalMatrix is indexed by rows only.")
        return CategoricalMatrix(np.ascontiguousarray(numeric), np.ascontiguousarray(codes),
                                 self.n_features)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("A CategoricalMatrix is not made a dense array implicitly; "
                        "call its toarray() or tocsr().")

    def __array_function__(self, func, types, args, kwargs):
        """``np.concatenate`` of categorical blocks along rows (how Dask joins chunks),
        ``np.shape`` and ``np.ndim``; no other numpy function."""
        if func is np.concatenate:
            return concatenate(*args, **kwargs)
        if func is np.shape:
            return self.shape
        if func is np.ndim:
            return self.ndim
        return NotImplemented

    def astype(self, dtype, copy=True):
        if np.dtype(dtype) == self.dtype and not copy:
            return self
        return CategoricalMatrix(self.numeric.astype(dtype), self.columns.copy() if copy
                                 else self.columns, self.n_features)

    def tocsr(self):
        """The same features as a scipy CSR matrix in canonical form."""
        from .table_loops import table_csr  # numba, on first use

        matrix = sp.csr_matrix(table_csr(self.numeric, self.columns, self.n_features,
                                         self.dtype), shape=self.shape)
        matrix.has_sorted_indices = True
        return matrix

    def kept_csr(self):
        """:meth:`tocsr`, made at the first call and kept with the block: the matrix of
        the kernels that do not read blocks, made once per fit rather than per round."""
        if self._csr is None:
            self._csr = self.tocsr()
        return self._csr

    def toarray(self):
        dense = np.zeros(self.shape, dtype=self.dtype)
        p = self.numeric.shape[1]
        dense[:, :p] = self.numeric
        rows = np.arange(self.shape[0])
        for c in range(self.columns.shape[1]):
            found = self.columns[:, c] >= 0
            dense[rows[found], self.columns[found, c]] = 1
        return dense

    def __matmul__(self, other):
        """``X @ other`` for a vector or a matrix of ``n_features`` rows."""
        other = np.asarray(other)
        p = self.numeric.shape[1]
        out = self.numeric @ other[:p]
        for c in range(self.columns.shape[1]):
            codes = self.columns[:, c]
            found = codes >= 0
            out[found] += other[codes[found]]
        return out

    def transpose_product(self, values):
        """``X.T @ values`` for a vector of one value per row, as a float64 vector."""
        values = np.asarray(values, dtype=np.float64)
        p = self.numeric.shape[1]
        out = np.zeros(self.n_features)
        out[:p] = values @ self.numeric
        for c in range(self.columns.shape[1]):
            codes = self.columns[:, c]
            found = codes >= 0
            out += np.bincount(codes[found], weights=values[found], minlength=self.n_features)
        return out


def concatenate(blocks, axis=0):
    """Categorical blocks of the same features, one after the other (``axis=0``)."""
    blocks = list(blocks)
    if len(blocks) == 1 and is_categorical_matrix(blocks[0]):  # along any axis: itself
        return blocks[0]
    if axis != 0 or not all(is_categorical_matrix(b) for b in blocks) or \
            len({b.n_features for b in blocks}) != 1:
        raise ValueError("Categorical blocks are joined along rows, of the same features.")
    return CategoricalMatrix(np.concatenate([b.numeric for b in blocks]),
                             np.concatenate([b.columns for b in blocks]),
                             blocks[0].n_features)


def is_categorical_matrix(X):
    """Whether ``X`` is a :class:`CategoricalMatrix`."""
    return type(X) is CategoricalMatrix


def categorical_moments(X, weight, index, n_classes):
    """Weighted column sums and sums of squares of a categorical block, by class:
    ``(n_classes, d)`` each.  The numeric columns' in one compiled read
    (:func:`~.moment_loops.weighted_moments`); a level's sum and square are the weight
    of its rows (a dummy is 0 or 1), counted from the codes.

    ``index`` holds each row's class (empty: every row in class 0); ``weight`` None
    weighs every row 1.
    """
    from .moment_loops import weighted_moments  # numba, on first use

    n, p = X.numeric.shape
    sums, squares = np.zeros((n_classes, X.shape[1])), np.zeros((n_classes, X.shape[1]))
    row_weight = np.empty(0) if weight is None else np.ascontiguousarray(weight,
                                                                         dtype=np.float64)
    numeric_sums, numeric_squares = np.zeros((n_classes, p)), np.zeros((n_classes, p))
    with np.errstate(over="ignore"):
        weighted_moments(X.numeric, row_weight, index, numeric_sums, numeric_squares)
    sums[:, :p], squares[:, :p] = numeric_sums, numeric_squares
    classes = np.zeros(n, dtype=np.intp) if index.shape[0] == 0 else np.asarray(index)
    for c in range(X.columns.shape[1]):
        codes = X.columns[:, c]
        found = codes >= 0
        cells = classes[found] * X.shape[1] + codes[found]
        counts = np.bincount(cells, weights=None if weight is None else row_weight[found],
                             minlength=n_classes * X.shape[1])
        sums += counts.reshape(n_classes, X.shape[1])
    squares[:, p:] = sums[:, p:]
    return sums, squares
