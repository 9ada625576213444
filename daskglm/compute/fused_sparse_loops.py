"""The compiled loops of the kernels on sparse partitions (numba): a CSR matrix's
Hessian (:func:`fused_csr_hessian_rows`) and a table's categorical block
(:func:`fused_categorical_rows`, :func:`fused_categorical_hessian_rows`), and the family's
formula on all rows of a partition (:func:`family_rows_of`, for a CSR matrix's gradient).

As the dense loops of :mod:`.fused_loops`, the fused ones read a row's stored values once
for its predictor and once, while still in the cache, for its products,
:data:`~.fused_loops.BLOCK_ROWS` rows at a time, with the family's formula of
:mod:`.family_formulas`.  A change to either of those files must touch this one too
(numba's on-disk cache keys a function on its own file only).
"""

from __future__ import annotations

import numba
import numpy as np

from .family_formulas import FASTMATH, weighted_family_rows
from .fused_loops import BLOCK_ROWS

__all__ = ["family_rows_of", "fused_csr_hessian_rows",
           "fused_categorical_rows", "fused_categorical_hessian_rows"]


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _csr_chunk_stats(indptr, indices, data, y, weight, offset, coef, intercept, family,
                     parameter, first, count, eta, row_loss, residual, curvature, work,
                     scale_bits):
    """:func:`~.fused_loops._chunk_rows_stats` for rows ``first`` to ``first + count`` of a CSR matrix:
    each row's predictor from its stored values, then the family's formula, weighted."""
    for i in range(count):
        value = intercept
        for p in range(indptr[first + i], indptr[first + i + 1]):
            value += data[p] * coef[indices[p]]
        eta[i] = value
    if offset.shape[0]:
        for i in range(count):
            eta[i] += offset[first + i]
    weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def family_rows_of(eta, y, weight, family, parameter, residuals):
    """The family's formula at the predictors ``eta`` of all rows, weighted:
    :data:`BLOCK_ROWS` rows at a time, each row's derivative into ``residuals``.  Returns
    the loss and ``sum(r)``, summed a block at a time."""
    n = eta.shape[0]
    buffers = np.empty((4, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    row_loss, work = buffers[0], buffers[1:]
    no_curvature = buffers[0, :0]
    loss = 0.0
    intercept_grad = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        residual = residuals[first:first + count]
        weighted_family_rows(family, parameter, y, weight, first, count,
                             eta[first:first + count], row_loss, residual, no_curvature, work,
                             scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
        loss += block_loss
        intercept_grad += block_intercept
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def fused_csr_hessian_rows(indptr, indices, data, y, weight, offset, coef, intercept, family,
                           parameter, grad, upper, col_sums):
    """A CSR partition's loss, gradient and Hessian sums: adds ``r * x`` to ``grad``,
    ``h * x`` to ``col_sums`` and the products ``h x_a x_b`` of each row's stored values,
    ``b`` at or after ``a``, to ``upper`` (``d x d``; with sorted column indices, the
    upper triangle of ``X^T diag(h) X``).  Returns the loss, ``sum(r)`` and ``sum(h)``."""
    n = indptr.shape[0] - 1
    buffers = np.empty((7, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, curvature, work = (buffers[0], buffers[1], buffers[2],
                                                buffers[3], buffers[4:])
    loss = 0.0
    intercept_grad = 0.0
    total_curvature = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _csr_chunk_stats(indptr, indices, data, y, weight, offset, coef, intercept, family,
                         parameter, first, count, eta, row_loss, residual, curvature, work,
                         scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        block_curvature = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            block_curvature += curvature[i]
            r = residual[i]
            h = curvature[i]
            start, stop = indptr[first + i], indptr[first + i + 1]
            for a in range(start, stop):
                column = indices[a]
                grad[column] += r * data[a]
                scaled = h * data[a]
                col_sums[column] += scaled
                for b in range(a, stop):
                    upper[column, indices[b]] += scaled * data[b]
        loss += block_loss
        intercept_grad += block_intercept
        total_curvature += block_curvature
    return loss, intercept_grad, total_curvature


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _categorical_chunk_stats(numeric, columns, y, weight, offset, coef, intercept, family,
                             parameter, first, count, eta, row_loss, residual, curvature,
                             work, scale_bits):
    """:func:`~.fused_loops._chunk_rows_stats` for rows ``first`` to ``first + count`` of a categorical
    block (:class:`~.categorical_matrix.CategoricalMatrix`): each row's predictor from its
    numeric values and its levels' coefficients, then the family's formula, weighted."""
    p = numeric.shape[1]
    for i in range(count):
        row = first + i
        value = intercept
        for j in range(p):
            value += numeric[row, j] * coef[j]
        for c in range(columns.shape[1]):
            column = columns[row, c]
            if column >= 0:
                value += coef[column]
        eta[i] = value
    if offset.shape[0]:
        for i in range(count):
            eta[i] += offset[first + i]
    weighted_family_rows(family, parameter, y, weight, first, count, eta, row_loss, residual,
                          curvature, work, scale_bits)


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def fused_categorical_rows(numeric, columns, y, weight, offset, coef, intercept, family,
                           parameter, grad):
    """:func:`~.fused_loops.fused_rows` for a categorical block (``numeric`` values and each row's
    level ``columns``): each row's ``r * x`` is its numeric values times ``r``, and ``r``
    added to the gradient of each of its levels.  Returns the loss and ``sum(r)``."""
    n, p = numeric.shape
    buffers = np.empty((6, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, work = buffers[0], buffers[1], buffers[2], buffers[3:]
    no_curvature = buffers[0, :0]
    loss = 0.0
    intercept_grad = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _categorical_chunk_stats(numeric, columns, y, weight, offset, coef, intercept, family,
                                 parameter, first, count, eta, row_loss, residual,
                                 no_curvature, work, scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            r = residual[i]
            row = first + i
            for j in range(p):
                grad[j] += r * numeric[row, j]
            for c in range(columns.shape[1]):
                column = columns[row, c]
                if column >= 0:
                    grad[column] += r
        loss += block_loss
        intercept_grad += block_intercept
    return loss, intercept_grad


@numba.njit(cache=True, nogil=True, fastmath=FASTMATH, error_model="numpy")
def fused_categorical_hessian_rows(numeric, columns, y, weight, offset, coef, intercept,
                                   family, parameter, grad, upper, col_sums):
    """:func:`fused_categorical_rows` with the curvatures ``h``, as
    :func:`fused_csr_hessian_rows`: ``h * x`` to ``col_sums`` and the upper triangle of
    ``X^T diag(h) X`` to ``upper``.  A row adds ``h x_a x_b`` for its numeric pairs,
    ``h x_a`` for each numeric value and level, and ``h`` for each pair of its levels
    (the levels' columns come after the numeric ones, in the order of their categorical
    columns, so every product lands at or above the diagonal).  Returns the loss,
    ``sum(r)`` and ``sum(h)``."""
    n, p = numeric.shape
    k = columns.shape[1]
    buffers = np.empty((7, BLOCK_ROWS))
    scale_bits = np.empty(BLOCK_ROWS, dtype=np.int64)
    eta, row_loss, residual, curvature, work = (buffers[0], buffers[1], buffers[2],
                                                buffers[3], buffers[4:])
    loss = 0.0
    intercept_grad = 0.0
    total_curvature = 0.0
    for first in range(0, n, BLOCK_ROWS):
        count = min(first + BLOCK_ROWS, n) - first
        _categorical_chunk_stats(numeric, columns, y, weight, offset, coef, intercept, family,
                                 parameter, first, count, eta, row_loss, residual, curvature,
                                 work, scale_bits)
        block_loss = 0.0
        block_intercept = 0.0
        block_curvature = 0.0
        for i in range(count):
            block_loss += row_loss[i]
            block_intercept += residual[i]
            block_curvature += curvature[i]
            r = residual[i]
            h = curvature[i]
            row = first + i
            for a in range(p):
                value = numeric[row, a]
                grad[a] += r * value
                scaled = h * value
                col_sums[a] += scaled
                for b in range(a, p):
                    upper[a, b] += scaled * numeric[row, b]
                for c in range(k):
                    column = columns[row, c]
                    if column >= 0:
                        upper[a, column] += scaled
            for c in range(k):
                column = columns[row, c]
                if column < 0:
                    continue
                grad[column] += r
                col_sums[column] += h
                for e in range(c, k):
                    other = columns[row, e]
                    if other >= 0:
                        upper[column, other] += h
        loss += block_loss
        intercept_grad += block_intercept
        total_curvature += block_curvature
    return loss, intercept_grad, total_curvature
