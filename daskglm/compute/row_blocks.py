"""Blocks of rows and the products every kernel takes with them, for the kernels of
:mod:`daskglm.compute.kernels` and the other per-partition passes of this package.

A dense partition is read in cache-sized row blocks (:func:`row_blocks`), so that each
row of ``X`` is read from memory once per evaluation; sparse and device partitions are one
block.  A dense numpy float32 block is widened into a reused float64 buffer
(:func:`widening_buffer`, :func:`widened_block`) so that products accumulate in float64,
and every block temporary reuses one buffer (:func:`block_scratch`).  Nothing in this
module imports dask.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..backend import array_module, is_device, is_device_sparse, namespace
from .csr_products import csr_weighted_gram

__all__ = ["BLOCK_BYTES", "block_rows", "row_blocks", "rows_between", "is_sparse_matrix",
           "is_host_dense", "flat_vector", "as_float64", "total_weight", "transpose_product",
           "block_transpose_product", "widening_buffer", "widened_block", "block_scratch",
           "sparse_weighted_gram", "weighted_gram"]

#: Bytes of ``X`` processed per block: a quarter of a typical 2 MiB L2 cache.
BLOCK_BYTES = 1 << 19


def block_rows(n_features, products=False):
    """Rows per block; ``products``: at least ``n_features``, for blocks that form ``X_b^T X_b``.

    A second-moment product of a block with fewer rows than columns does less arithmetic
    per byte than BLAS needs to run at speed (at 1,000 columns, 65-row blocks take three
    times as long as one ``X.T @ X``), so those blocks grow past the cache size.
    """
    rows = max(64, BLOCK_BYTES // (8 * max(1, n_features)))
    return max(rows, n_features) if products else rows


def row_blocks(X, products=False):
    """Yield ``(start, stop)`` row ranges; sparse partitions are one block."""
    n = X.shape[0]
    # sparse partitions, and device arrays (one large launch beats many small ones), are
    # one block
    one_block = is_sparse_matrix(X) or is_device(X) or n == 0
    step = n if one_block else block_rows(X.shape[1], products)
    for start in range(0, n, max(step, 1)):
        yield start, min(start + step, n)


def rows_between(weight, start, stop):
    """Rows ``start:stop`` of a per-row array (weights, offsets); None stays None."""
    return None if weight is None else weight[start:stop]


def is_sparse_matrix(X):
    """Whether ``X`` is a sparse matrix: scipy's or ``cupyx.scipy.sparse``."""
    return type(X) is not np.ndarray and (sp.issparse(X) or is_device_sparse(X))


def is_host_dense(X):
    """Whether ``X`` is a numpy array: the partitions the fused kernels take."""
    return isinstance(X, np.ndarray)


def flat_vector(xp, values):
    """``values`` (a product with ``X``, perhaps of shape (n, 1)) as a 1-D array."""
    if type(values) is np.ndarray:
        return values.ravel()
    return xp.reshape(xp.asarray(values), (-1,))


def as_float64(xp, values):
    """``values`` in float64 (itself when it is)."""
    return values if values.dtype == xp.float64 else xp.astype(values, xp.float64)


def total_weight(X, weight):
    """The rows' total weight: their number when ``weight`` is None."""
    if weight is None:
        return float(X.shape[0])
    return float(namespace(weight).sum(weight))


def transpose_product(X, r):
    """``X.T @ r`` as a flat dense vector, for dense or sparse ``X``."""
    return flat_vector(namespace(X), X.T @ r)


def block_transpose_product(X_b, r):
    """``X_b.T @ r`` in float64; for a dense float32 block the product runs in float32."""
    xp = namespace(X_b)
    if X_b.dtype == xp.float32 and not is_sparse_matrix(X_b):
        r = xp.astype(r, xp.float32)
    return as_float64(xp, transpose_product(X_b, r))


def widening_buffer(X, products=False):
    """For dense numpy float32 ``X``, a reusable float64 block buffer (:func:`block_scratch`)
    into which :func:`widened_block` copies each block, so that the generic block path's
    products accumulate in float64, as the fused loops' do; None for other ``X`` (whose
    products run in its own dtype: float64, sparse, or a GPU's float32)."""
    if is_host_dense(X) and X.dtype == np.float32:
        return block_scratch(X, products=products, dtype=np.float64)
    return None


def widened_block(X, start, stop, buffer):
    """Rows ``start:stop`` of ``X``, copied into ``buffer`` (float64) when there is one."""
    if buffer is None:
        return X[start:stop, :]
    block = buffer[: stop - start]
    np.copyto(block, X[start:stop, :])
    return block


def block_scratch(X, products=False, dtype=np.float64):
    """One reusable block-sized buffer of ``dtype`` for a kernel call on dense ``X``: numpy,
    or CuPy (one block, for :mod:`daskglm.compute.summaries`); None for sparse ``X`` and
    other libraries.

    Reusing it keeps every block's temporaries out of the allocator: with the small
    ``MALLOC_TRIM_THRESHOLD_`` that Dask's nanny sets, a fresh 512 KiB temporary per block
    costs a new memory mapping and its page faults each time.
    """
    if is_host_dense(X):
        rows = min(X.shape[0], block_rows(X.shape[1], products))
        return np.empty((rows, X.shape[1]), dtype=dtype)
    if is_device(X) and not is_sparse_matrix(X):
        return array_module(X).empty(X.shape, dtype=dtype)
    return None


def sparse_weighted_gram(X, h):
    """``X.T @ diag(h) @ X`` as a dense array, for a scipy or ``cupyx`` CSR ``X``."""
    if sp.issparse(X):
        return csr_weighted_gram(X, h)
    import cupyx.scipy.sparse

    return (X.T @ (cupyx.scipy.sparse.diags(h) @ X)).toarray()


def weighted_gram(X_b, h, scratch):
    """``X_b.T @ diag(h) @ X_b`` and ``X_b.T @ h`` for a block (``scratch``: a block
    buffer from :func:`block_scratch`, used for numpy blocks)."""
    if is_sparse_matrix(X_b):
        return sparse_weighted_gram(X_b, h), transpose_product(X_b, h)
    # X_b^T diag(h) X_b as S^T S with S = diag(sqrt(h)) X_b: numpy hands a product of an
    # array with its own transpose to BLAS's symmetric rank-k update, half the work of a
    # general product.  Curvatures h are never negative (convex canonical losses, Fisher
    # weights for other links, weights >= 0).
    xp = namespace(X_b)
    if type(X_b) is np.ndarray and scratch is not None:
        scaled = np.multiply(X_b, np.sqrt(h)[:, None], out=scratch[: X_b.shape[0]],
                             casting="same_kind")
    else:
        scaled = X_b * xp.astype(xp.sqrt(h), X_b.dtype)[:, None]
    return scaled.T @ scaled, block_transpose_product(X_b, h)
