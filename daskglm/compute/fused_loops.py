"""The compiled loops of :func:`daskglm.compute.blocked.fused_loss_grad` (numba).

Imported on the first fused gradient only, so that a worker imports numba when a kernel
needs it.  Every function here is defined at module level with ``cache=True``, and the
family is an integer argument (a code of :mod:`daskglm.compute.loss_codes`) with a float
``parameter`` (the Tweedie power, the negative binomial's ``alpha``; 0 for the others),
not a compiled function passed in: numba's on-disk cache does not keep a loop compiled
for a function argument (every new process compiles it again, about a second), while it
keeps one compiled for an integer.

Each family's compiled formula (the losses, the derivatives ``r`` and, when asked, the
curvatures ``h`` of a chunk of rows at their linear predictors) is in
:mod:`.family_formulas`; a change there must touch this file too (numba's on-disk cache
keys a function on its own file only).  The loops of sparse partitions (CSR matrices,
categorical blocks) are in :mod:`.fused_sparse_loops`.

Two loops read each row of ``X`` from memory once, a chunk of rows (:data:`CHUNK_BYTES`
of ``X``, at most a summing block) at a time -- the chunk's predictors, then the family's
formula, then the products with the rows, read again from the cache, four rows at a time:

* :func:`rows_in_chunks` (:func:`fused_rows`) -- the loss, ``X^T r`` and ``sum(r)``;
* :func:`hessian_rows` -- also ``h``: it sums ``h`` and ``h * x`` and writes each row
  scaled by ``sqrt(h)`` to a buffer, whose symmetric product (BLAS, in
  :func:`daskglm.compute.blocked.fused_loss_grad_hess`) is the block's ``X^T diag(h) X``.

:func:`fused_rows_into` is :func:`fused_rows` with its buffers passed in
(:func:`fused_workspace`), for compiled loops that call it once per step on a few rows
(:mod:`.sgd_loops`).  The costs of the loops against one read of ``X``:
``python -m benchmarks fused-kernel`` (``benchmarks/README.md``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .family_formulas import FASTMATH, weighted_family_rows

__all__ = ["fused_rows", "fused_rows_into", "fused_workspace", "rows_in_chunks", "hessian_rows",
           "fused_rows_many", "BLOCK_ROWS", "CHUNK_BYTES"]


#: Rows summed into a partial sum before it is added to the total: summing in two levels
#: keeps the round-off of the loss and gradient sums near that of numpy's pairwise sums
#: (a plain running sum over ``n`` rows grows its error with ``n``).
BLOCK_ROWS = 128


#: Bytes of ``X`` per chunk (at most :data:`BLOCK_ROWS` rows): the chunk is read again
#: from the cache for its products.  128 KiB fits the second-level cache of current CPUs;
#: 16 KiB to 256 KiB measured alike at 50 and 500 columns (within the noise of a loaded
#: machine).
CHUNK_BYTES = 1 << 17


# --------------------------------------------------------------------------------------
# the loops over rows


@numba.njit(cache=True, nogil=True, inline="always")
def _chunk_rows(d, itemsize):
    """Rows per chunk: :data:`CHUNK_BYTES` of ``X``, at most :data:`BLOCK_ROWS`."""
    return max(1, min(BLOCK_ROWS, CHUNK_BYTES // max(1, d * itemsize)))


@numba.njit(cache=True, nogil=True)
def fused_workspace(d, itemsize):
    """The buffers of :func:`fused_rows_into` for ``X`` of ``d`` columns of ``itemsize``
    bytes: ``(buffers, scale_bits, block_grad)``."""
    chunk = _chunk_rows(d, itemsize)
    return np.empty((6, chunk)), np.empty(chunk, dtype=np.int64), np.empty(d)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, inline="always")
def _chunk_predictors(X, first, count, coef, intercept, offset, eta):
    """``eta[:count]``: the linear predictors of rows ``first`` to ``first + count``."""
    d = X.shape[1]
    for i in range(count):
        row = X[first + i]
        value = intercept
        for j in range(d):
            value += row[j] * coef[j]
        eta[i] = value
    if offset.shape[0]:
        for i in range(count):
            eta[i] += offset[first + i]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, inline="always")
def _add_products(X, first, count, residual, grad):
    """Add ``residual[i] * X[first + i]`` to ``grad`` for ``i < count``, four rows at a
    time: ``grad`` is loaded and stored once per four rows (about 10% of the chunked
    gradient at 50 columns)."""
    d = X.shape[1]
    i = 0
    while i + 4 <= count:
        row0, row1, row2, row3 = X[first + i], X[first + i + 1], X[first + i + 2], X[first + i + 3]
        r0, r1, r2, r3 = residual[i], residual[i + 1], residual[i + 2], residual[i + 3]
        for j in range(d):
            grad[j] += (r0 * row0[j] + r1 * row1[j]) + (r2 * row2[j] + r3 * row3[j])
        i += 4
    while i < count:
        row = X[first + i]
        r = residual[i]
        for j in range(d):
            grad[j] += r * row[j]
        i += 1


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _chunk_rows_stats(X, y, weight, offset, coef, intercept, family, parameter, first, count,
                      eta, row_loss, residual, curvature, work, scale_bits):
    """Weighted ``row_loss``, ``residual`` (and ``curvature`` when not empty) of rows
    ``first`` to ``first + count``: their predictors, then the family's formula."""
    _chunk_predictors(X, first, count, coef, intercept, offset, eta)
    weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def fused_rows(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """Add each row's ``r * x`` to ``grad``; return the loss and ``sum(r)``.

    ``weight`` and ``offset`` of length 0 stand for none.  Rows are summed in blocks of
    :data:`BLOCK_ROWS`, and the blocks' sums into the totals, in row order.
    """
    return rows_in_chunks(X, y, weight, offset, coef, intercept, family, parameter, grad)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def rows_in_chunks(X, y, weight, offset, coef, intercept, family, parameter, grad):
    """:func:`fused_rows` a chunk of rows at a time: predictors, then losses, then products."""
    buffers, scale_bits, block_grad = fused_workspace(X.shape[1], X.itemsize)
    return fused_rows_into(X, y, weight, offset, coef, intercept, family, parameter, grad,
                           buffers, scale_bits, block_grad)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def fused_rows_into(X, y, weight, offset, coef, intercept, family, parameter, grad, buffers,
                    scale_bits, block_grad):
    """:func:`fused_rows` with its buffers passed in (from :func:`fused_workspace`), for
    loops that call it many times: the same sums, nothing allocated."""
    n, d = X.shape
    chunk = buffers.shape[1]
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    loss = 0.0
    intercept_grad = 0.0
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_loss = 0.0
        block_intercept = 0.0
        block_grad[:] = 0.0
        for first in range(start, stop, chunk):
            count = min(first + chunk, stop) - first
            _chunk_rows_stats(X, y, weight, offset, coef, intercept, family, parameter, first,
                              count, eta, row_loss, residual, no_curvature, work, scale_bits)
            for i in range(count):
                block_loss += row_loss[i]
                block_intercept += residual[i]
            _add_products(X, first, count, residual, block_grad)
        loss += block_loss
        intercept_grad += block_intercept
        for j in range(d):
            grad[j] += block_grad[j]
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def fused_rows_many(X, y, weights, offset, coefs, intercepts, family, parameter, grads,
                    losses, intercept_grads):
    """:func:`fused_rows` for several coefficient vectors (``coefs[f]``, ``intercepts[f]``)
    and row weights (``weights[f]``, the rows of a 2-D array) at once: each chunk of ``X``
    is read from memory once, while it is in the cache, for all of them.

    ``grads[f]`` is added to; ``losses[f]`` and ``intercept_grads[f]`` are set.  Each
    request's rows go through the same chunks, blocks and operations as
    :func:`fused_rows`, so its sums are those of a call of its own.
    """
    n, d = X.shape
    k = coefs.shape[0]
    buffers, scale_bits, _ = fused_workspace(d, X.itemsize)
    chunk = buffers.shape[1]
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    block_grads = np.empty((k, d))
    for f in range(k):
        losses[f] = 0.0
        intercept_grads[f] = 0.0
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_grads[:] = 0.0
        for f in range(k):
            block_loss = 0.0
            block_intercept = 0.0
            grad = block_grads[f]
            for first in range(start, stop, chunk):
                count = min(first + chunk, stop) - first
                _chunk_rows_stats(X, y, weights[f], offset, coefs[f], intercepts[f], family,
                                  parameter, first, count, eta, row_loss, residual,
                                  no_curvature, work, scale_bits)
                for i in range(count):
                    block_loss += row_loss[i]
                    block_intercept += residual[i]
                _add_products(X, first, count, residual, grad)
            losses[f] += block_loss
            intercept_grads[f] += block_intercept
            for j in range(d):
                grads[f, j] += grad[j]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def hessian_rows(X, y, weight, offset, coef, intercept, family, parameter, grad, curvature_grad,
                 scaled):
    """:func:`rows_in_chunks` with the rows' curvatures ``h`` (weighted as the residuals):
    also add each row's ``h * x`` to ``curvature_grad`` and write ``sqrt(h) * x`` to the
    same row of ``scaled`` (of ``X``'s dtype, at least as many rows); return the loss,
    ``sum(r)`` and ``sum(h)``."""
    n, d = X.shape
    buffers, scale_bits, _ = fused_workspace(d, X.itemsize)
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    curvature = np.empty(buffers.shape[1])
    loss = 0.0
    intercept_grad = 0.0
    total_curvature = 0.0
    block_grad = np.zeros(d)
    block_curvature_grad = np.zeros(d)
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_loss = 0.0
        block_intercept = 0.0
        block_curvature = 0.0
        block_grad[:] = 0.0
        block_curvature_grad[:] = 0.0
        for first in range(start, stop, buffers.shape[1]):
            count = min(first + buffers.shape[1], stop) - first
            _chunk_rows_stats(X, y, weight, offset, coef, intercept, family, parameter, first,
                              count, eta, row_loss, residual, curvature, work, scale_bits)
            for i in range(count):
                block_loss += row_loss[i]
                block_intercept += residual[i]
                block_curvature += curvature[i]
            _add_products(X, first, count, residual, block_grad)
            _add_products(X, first, count, curvature, block_curvature_grad)
            for i in range(count):
                root = math.sqrt(curvature[i])
                row = X[first + i]
                out = scaled[first + i]
                for j in range(d):
                    out[j] = root * row[j]
        loss += block_loss
        intercept_grad += block_intercept
        total_curvature += block_curvature
        for j in range(d):
            grad[j] += block_grad[j]
            curvature_grad[j] += block_curvature_grad[j]
    return loss, intercept_grad, total_curvature
