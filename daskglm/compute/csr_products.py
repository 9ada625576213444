"""Compiled products of a CSR matrix with itself: ``X^T diag(h) X`` into a dense array.

scipy forms ``X.T @ (h X)`` as a sparse matrix product: it builds a sparse result
row by row, with its index bookkeeping, and converts it to a dense array at the end.  The
second moments the kernels need are dense ``d x d`` arrays anyway, so here every row adds
the products of its own non-zeros straight into one.  A row with ``k`` non-zeros costs
``k (k + 1) / 2`` multiply-adds.  The loop is compiled with numba (a dependency of
``sparse``), imported on first use so that dense-only work never pays for it; the scipy
product is the reference the tests hold it to.
"""

from __future__ import annotations

import numpy as np

__all__ = ["csr_weighted_gram"]

_COMPILED = None


def _compiled():
    global _COMPILED
    if _COMPILED is None:
        import numba

        @numba.njit(cache=True, nogil=True)
        def add_upper(data, indices, indptr, weights, out):
            for row in range(indptr.shape[0] - 1):
                weight = weights[row]
                if weight == 0.0:
                    continue
                start, stop = indptr[row], indptr[row + 1]
                for a in range(start, stop):
                    column = indices[a]
                    scaled = weight * data[a]
                    for b in range(a, stop):
                        out[column, indices[b]] += scaled * data[b]

        _COMPILED = add_upper
    return _COMPILED


def csr_weighted_gram(X, weights=None):
    """``X^T diag(weights) X`` as a dense array, for a CSR matrix in canonical form.

    Parameters
    ----------
    X : scipy.sparse CSR matrix of shape (n, d)
        Column indices sorted within each row, no duplicates (the kernels' layout, see
        :func:`daskglm.compute.kernels.as_csr_or_dense`).
    weights : ndarray of shape (n,), optional
        Row weights (all ones when None).

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric, float64.
    """
    n, d = X.shape
    weights = np.ones(n) if weights is None else np.ascontiguousarray(weights, dtype=np.float64)
    out = np.zeros((d, d))
    _compiled()(np.asarray(X.data, dtype=np.float64), X.indices, X.indptr, weights, out)
    # sorted indices put every product at or above the diagonal; mirror the strict part
    out += np.triu(out, 1).T
    return out
