"""Pure per-partition computations: ``(partition, broadcast arguments) -> additive statistics``.

A partition is the tuple ``(X, y, weight)`` of one block of rows, co-located on one worker;
``weight`` is None when every row weighs 1.  A fit with an offset has partitions
``(X, y, weight, offset)``: the offset is added to every linear predictor of the loss
kernels here (:func:`partition_offset`); kernels that unpack three items refuse such
partitions, and the estimators refuse their solvers with an offset.  The parameter vector is the coefficients
followed, when an intercept is fitted, by the intercept: no column of ones is ever added
to ``X``.  Dense partitions are processed in cache-sized row blocks (:mod:`.row_blocks`) so that each row of
``X`` is read from memory once per evaluation: ``X_b @ coef`` and ``X_b.T @ r`` run while
``X_b`` is still in cache.  For the gradient and the Hessian of the common families and
for the Gram statistics, dense numpy partitions go further: :mod:`daskglm.compute.blocked`
fuses each row's (or block's) products into one compiled loop or one symmetric product.
A float32 ``X`` is never copied whole: the fused loops convert each element as they read
it, the generic path widens one cache-sized block at a time for the predictors and the
gradient, Gram and Hessian products run in float32, and every partial sum is accumulated
in float64.

Sparse partitions are scipy CSR matrices (:func:`as_csr_or_dense` converts any other sparse
layout once, when a partition is packed) and every kernel works on them without densifying
``X``: products with ``X`` and ``X.T`` are sparse products, and second moments ``X^T W X``
are accumulated from each row's non-zeros into a dense array (:mod:`daskglm.compute.csr_products`).
``cupyx.scipy.sparse`` CSR partitions take the same branch with the same products, and
``X^T W X`` as the sparse product ``X^T (diag(w) X)`` made dense.

A table's partitions can be categorical blocks (:class:`.categorical_matrix.CategoricalMatrix`:
numeric columns and level codes).  The gradient and the Hessian of the compiled families
read them in compiled loops of their own; every other path here reads their CSR matrix
(:func:`kernel_matrix`).

Every path but the compiled one is written against the array API namespace of the
partition (:func:`daskglm.backend.namespace`): numpy, CuPy and any library of the
standard run the same code; only what returns to the driver is numpy (``to_host``).

Every statistic returned here is a sum over rows and supports ``+``; :func:`tree_sum`
adds a list of them in a fixed order, which is how every engine reduces them.  Nothing in
this module imports dask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backend import (
    array_module,
    from_host,
    is_device,
    is_numpy_namespace,
    namespace,
    to_host,
)
from .blocked import (
    augmented_gram,
    csr_loss_grad,
    csr_loss_grads,
    fused_categorical_loss_grad,
    fused_categorical_loss_grad_hess,
    fused_csr_loss_grad_hess,
    fused_loss_grad,
    fused_loss_grad_hess,
    fused_loss_grads,
    pointwise_for,
)
from .categorical_matrix import is_categorical_matrix
from .row_blocks import (
    as_float64,
    block_scratch,
    block_transpose_product,
    flat_vector,
    is_host_dense,
    is_sparse_matrix,
    row_blocks,
    rows_between,
    sparse_weighted_gram,
    total_weight,
    transpose_product,
    weighted_gram,
    widened_block,
    widening_buffer,
)
from .tree import row_additive

__all__ = [
    "Stats", "GramStats", "loss_grad", "loss_grads", "loss_grad_hess", "gram",
    "linear_predictor",
    "partition_offset", "as_csr_or_dense",
]


def _block_eta(X_b, params, fit_intercept, offset):
    """``linear_predictor`` of a block in float64, the product in ``X_b``'s dtype.

    A float32 block (on a GPU: host blocks are widened first, :func:`widened_block`) is
    multiplied by float32 coefficients, a float32 product; the result is widened to
    float64 before the family sees it.
    """
    xp = namespace(X_b)
    params = from_host(params, like=X_b)
    if X_b.dtype == xp.float32 and not is_sparse_matrix(X_b):
        params = xp.astype(params, xp.float32)
    eta = as_float64(xp, linear_predictor(X_b, params, fit_intercept, None))
    return eta if offset is None else eta + offset


def as_csr_or_dense(X):
    """``X`` in a layout every kernel accepts: a scipy CSR matrix or a C-contiguous ndarray.

    Engines call this once per partition, when they pack it, so that the kernels never
    convert.  CSR is the one sparse layout of the kernels: its row slices (cache blocks,
    mini-batches) cost only the rows' non-zeros, ``X @ v`` and ``X.T @ r`` are compiled
    loops over the stored entries, scikit-learn's text vectorisers produce it, and Dask
    concatenates scipy matrices natively.  pydata ``sparse`` arrays (COO, GCXS) are
    converted rather than supported twice: their products are slower and their row
    indexing copies.

    Parameters
    ----------
    X : ndarray, scipy.sparse matrix or array, or pydata ``sparse`` array, 2-D

    Returns
    -------
    scipy.sparse CSR matrix or ndarray
        Sparse input becomes CSR in canonical form (sorted column indices, no duplicate
        entries; the input is never modified); anything else a C-contiguous ndarray.  A
        float32 or float64 dtype is kept; other dtypes become float64.
    """
    if is_categorical_matrix(X):  # a layout the kernels read as it is
        return X
    if not sp.issparse(X) and hasattr(X, "to_scipy_sparse"):  # pydata sparse
        X = X.to_scipy_sparse()
    if is_sparse_matrix(X):  # scipy's or cupyx's, which mirror each other here
        csr = X.tocsr()
        if csr.dtype not in (np.float32, np.float64):
            csr = csr.astype(np.float64)
        if not csr.has_canonical_format:
            csr = csr.copy() if csr is X else csr
            csr.sum_duplicates()  # also sorts the column indices of every row
        return csr
    xp = namespace(X)
    X = xp.asarray(X)
    if X.dtype not in (xp.float32, xp.float64):
        X = xp.astype(X, xp.float64)
    if is_numpy_namespace(xp) or is_device(X):
        return array_module(X).ascontiguousarray(X)
    return X  # the standard has no memory layout


def linear_predictor(X, params, fit_intercept, offset=None):
    """``X @ coef (+ intercept) (+ offset)`` for one block of rows."""
    xp = namespace(X)
    params = from_host(params, like=X)
    if fit_intercept:
        eta = flat_vector(xp, X @ params[:-1]) + params[-1]
    else:
        eta = flat_vector(xp, X @ params)
    return eta if offset is None else eta + offset


def partition_offset(part):
    """The offset of a partition ``(X, y, weight[, offset])``, None when it has none."""
    return part[3] if len(part) > 3 else None


@dataclass
class Stats:
    """Additive sums over rows: total weight, loss, gradient and optionally Hessian.

    ``grad`` and ``hess`` are with respect to the parameter vector (coefficients, then the
    intercept when one is fitted).  They are sums, not means.
    """

    weight: float
    loss: float
    grad: np.ndarray
    hess: np.ndarray | None = None

    def __add__(self, other):
        hess = None if self.hess is None else self.hess + other.hess
        return Stats(self.weight + other.weight, self.loss + other.loss, self.grad + other.grad, hess)


@row_additive
def loss_grad(part, params, family, fit_intercept):
    """Loss and gradient sums of one partition at ``params``: one read of ``X``."""
    X, y, weight = part[:3]
    offset = partition_offset(part)
    total = total_weight(X, weight)
    fused = _fused_loss_grad_for(X)
    pointwise = pointwise_for(family) if fused is not None else None
    if pointwise is None:
        X = kernel_matrix(X)
    if pointwise is not None:
        params = np.asarray(params, dtype=np.float64)
        coef, intercept = (params[:-1], params[-1]) if fit_intercept else (params, 0.0)
        loss, grad, intercept_grad = fused(X, y, weight, offset, coef, intercept, pointwise)
        if fit_intercept:
            grad = np.append(grad, intercept_grad)
        return Stats(total, loss, grad)
    n_params = params.shape[0]
    xp = namespace(X)
    grad = xp.zeros(n_params, dtype=xp.float64)
    loss = 0.0
    buffer = widening_buffer(X)
    for start, stop in row_blocks(X):
        X_b = widened_block(X, start, stop, buffer)
        eta = _block_eta(X_b, params, fit_intercept, rows_between(offset, start, stop))
        block_loss, r = family.loss_and_dloss(y[start:stop], eta, rows_between(weight, start, stop))
        loss += block_loss
        if fit_intercept:
            grad[:-1] += block_transpose_product(X_b, r)
            grad[-1] += xp.sum(r)
        else:
            grad += block_transpose_product(X_b, r)
    return Stats(total, float(loss), to_host(grad))


def _fused_loss_grad_for(X):
    """The compiled loss-and-gradient loop for partition ``X`` (a non-empty numpy array or
    scipy CSR matrix), or None."""
    if not X.shape[0]:
        return None
    if is_host_dense(X):
        return fused_loss_grad
    if sp.issparse(X) and X.format == "csr":
        return csr_loss_grad
    if is_categorical_matrix(X):
        return fused_categorical_loss_grad
    return None


def kernel_matrix(X):
    """``X`` as the generic (not compiled) paths read it: a categorical block
    (:class:`~.categorical_matrix.CategoricalMatrix`) as its CSR matrix (made once, then
    kept with the block), anything else as it is."""
    return X.kept_csr() if is_categorical_matrix(X) else X


def loss_grads(X, y, weights, params, family, fit_intercept):
    """:func:`loss_grad` of several models on the rows of one partition, model ``f`` at
    ``params[f]`` with row weights ``weights[f]`` (None: unit; no offset): one read of
    ``X`` for all of them when ``X`` is a numpy array, or a scipy CSR matrix with few
    enough columns (:data:`CSR_COEF_BYTES`), and the family has a compiled loop (the sums
    of :func:`loss_grad`, to the bit), one :func:`loss_grad` each otherwise (a
    categorical block too, in its own compiled loop).  A list of
    :class:`Stats`."""
    dense = is_host_dense(X)
    step = _csr_models_together(X)
    pointwise = pointwise_for(family) if (dense or step) and X.shape[0] else None
    if pointwise is None or len(params) < (2 if dense else CSR_MIN_MODELS):
        return [loss_grad((X, y, weight), p, family, fit_intercept)
                for weight, p in zip(weights, params)]
    params = np.asarray(params, dtype=np.float64)
    coefs = params[:, :-1] if fit_intercept else params
    intercepts = params[:, -1] if fit_intercept else np.zeros(len(params))
    if dense:
        unit = np.ones(X.shape[0])
        rows = np.stack([unit if weight is None else weight for weight in weights])
        losses, grads, intercept_grads = fused_loss_grads(X, y, rows, coefs, intercepts,
                                                          pointwise)
    else:
        parts = [csr_loss_grads(X, y, weights[start:start + step], coefs[start:start + step],
                                intercepts[start:start + step], pointwise)
                 for start in range(0, len(params), step)]
        losses, grads, intercept_grads = (np.concatenate(arrays) for arrays in zip(*parts))
    stats = []
    for f, weight in enumerate(weights):
        grad = np.append(grads[f], intercept_grads[f]) if fit_intercept else grads[f]
        stats.append(Stats(total_weight(X, weight), float(losses[f]), grad))
    return stats


#: Bytes of the predictors and derivatives (two float64 per row and model) of one batch of
#: :func:`loss_grads` on a CSR partition.
CSR_MODELS_BYTES = 64 << 20
#: Bytes of the coefficients of one batch of :func:`loss_grads` on a CSR partition, and
#: the fewest models a batch takes.  scipy's products with several vectors read a row of
#: the coefficient matrix at every stored value: they pay while that matrix stays in the
#: cache.  Measured on hashed rows (200,000 x 2^8 to 2^18, 39 stored values a row): 8
#: models together took 0.38 to 0.44 of the time of 8 products each at 2^8 to 2^16 columns
#: (4 MB of coefficients at 2^16) and 1.3 times it at 2^18 (16 MB); 2 models together took
#: 1.07 to 1.15 times it.
CSR_COEF_BYTES = 4 << 20
CSR_MIN_MODELS = 4


def _csr_models_together(X):
    """How many models :func:`loss_grads` computes in one batch on ``X``: 0 for a matrix
    that is not CSR or whose batches would be too small to pay."""
    if not (sp.issparse(X) and X.format == "csr") or not X.shape[0]:
        return 0
    step = min(CSR_MODELS_BYTES // (16 * X.shape[0]), CSR_COEF_BYTES // (8 * X.shape[1]))
    return step if step >= CSR_MIN_MODELS else 0


@row_additive
def loss_grad_hess(part, params, family, fit_intercept):
    """Loss, gradient and Hessian sums of one partition at ``params``: one read of ``X``."""
    X, y, weight = part[:3]
    offset = partition_offset(part)
    n_params = params.shape[0]
    n_coef = n_params - 1 if fit_intercept else n_params
    blocks = is_categorical_matrix(X) and X.shape[0] and pointwise_for(family) is not None
    if is_categorical_matrix(X) and not blocks:
        X = X.kept_csr()
    scratch = None if blocks else block_scratch(X, products=True, dtype=X.dtype)
    # the scaled rows are written in X's dtype: floating point only
    dense = is_host_dense(X) and X.shape[0] and X.dtype in (np.float32, np.float64)
    csr = sp.issparse(X) and X.format == "csr" and X.shape[0] and X.has_canonical_format
    pointwise = pointwise_for(family) if dense or csr or blocks else None
    if pointwise is not None:
        params = np.asarray(params, dtype=np.float64)
        coef, intercept = (params[:-1], params[-1]) if fit_intercept else (params, 0.0)
        if dense:
            loss, grad, intercept_grad, gram_x, col_sums, curvature = fused_loss_grad_hess(
                X, y, weight, offset, coef, intercept, pointwise, scratch.shape[0], scratch)
        elif blocks:
            loss, grad, intercept_grad, gram_x, col_sums, curvature = \
                fused_categorical_loss_grad_hess(X, y, weight, offset, coef, intercept,
                                                 pointwise)
        else:
            loss, grad, intercept_grad, gram_x, col_sums, curvature = \
                fused_csr_loss_grad_hess(X, y, weight, offset, coef, intercept, pointwise)
        hess = np.zeros((n_params, n_params))
        hess[:n_coef, :n_coef] = gram_x
        if fit_intercept:
            grad = np.append(grad, intercept_grad)
            hess[:n_coef, -1] = hess[-1, :n_coef] = col_sums
            hess[-1, -1] = curvature
        return Stats(total_weight(X, weight), loss, grad, hess)
    xp = namespace(X)
    grad = xp.zeros(n_params, dtype=xp.float64)
    hess = xp.zeros((n_params, n_params), dtype=xp.float64)
    loss = 0.0
    buffer = widening_buffer(X, products=True)  # the Gram stays in X's dtype (scratch)
    for start, stop in row_blocks(X, products=True):
        X_b = widened_block(X, start, stop, buffer)
        y_b, w_b = y[start:stop], rows_between(weight, start, stop)
        eta = _block_eta(X_b, params, fit_intercept, rows_between(offset, start, stop))
        block_loss, r = family.loss_and_dloss(y_b, eta, w_b)
        h = family.hessian_d2loss(y_b, eta, w_b)
        loss += block_loss
        gram_b, col_sums = weighted_gram(X_b, h, scratch)
        grad[:n_coef] += block_transpose_product(X_b, r)
        hess[:n_coef, :n_coef] += as_float64(xp, gram_b)
        if fit_intercept:
            grad[-1] += xp.sum(r)
            hess[:n_coef, -1] += col_sums
            hess[-1, :n_coef] += col_sums
            hess[-1, -1] += xp.sum(h)
    total = total_weight(X, weight)
    return Stats(total, float(loss), to_host(grad), to_host(hess))


@dataclass
class GramStats:
    """Weighted centred second moments of ``(X, y)``, merged exactly and stably.

    Holds the total weight, weighted means of the columns of ``X`` and of ``y``, and the
    centred cross-products ``Sxx = sum w (x - mean_x)(x - mean_x)^T``, ``Sxy``, ``Syy``.
    ``+`` merges two sets of rows with the pairwise update of Chan, Golub and LeVeque,
    which avoids the cancellation of the one-pass ``X^T X - n mean mean^T``.
    """

    weight: float
    mean_x: np.ndarray
    mean_y: float
    sxx: np.ndarray
    sxy: np.ndarray
    syy: float

    @classmethod
    def empty(cls, n_features):
        d = n_features
        return cls(0.0, np.zeros(d), 0.0, np.zeros((d, d)), np.zeros(d), 0.0)

    def __add__(self, other):
        if other.weight == 0:
            return self
        if self.weight == 0:
            return other
        total = self.weight + other.weight
        dx = other.mean_x - self.mean_x
        dy = other.mean_y - self.mean_y
        factor = self.weight * other.weight / total
        return GramStats(
            total,
            self.mean_x + dx * (other.weight / total),
            self.mean_y + dy * (other.weight / total),
            self.sxx + other.sxx + factor * np.outer(dx, dx),
            self.sxy + other.sxy + factor * dx * dy,
            self.syy + other.syy + factor * dy * dy,
        )

    def uncentred(self):
        """``(X^T W X, X^T W y)`` about the origin, for fits without an intercept."""
        xtx = self.sxx + self.weight * np.outer(self.mean_x, self.mean_x)
        xty = self.sxy + self.weight * self.mean_x * self.mean_y
        return xtx, xty


def _sparse_gram(X, y, weight):
    """Centred weighted Gram statistics of a CSR partition, ``X`` never densified.

    With ``W`` the total weight and ``m = X^T w / W`` the weighted column means,
    ``Sxx = X^T W X - W m m^T``, with ``X^T W X`` summed from the rows' non-zeros;
    ``Sxy = X^T (w * (y - mean_y))`` and ``Syy`` are exact.  Unlike the dense kernel's
    centred products, the subtraction in ``Sxx`` loses relative accuracy of about
    ``eps * max(m^2) / var`` for a column whose mean is large against its spread; sparse
    columns, mostly zeros, have small means.  Partitions are still merged exactly by
    :class:`GramStats`.
    """
    xp = namespace(y)
    weight = xp.ones(X.shape[0], dtype=xp.float64) if weight is None else weight
    total = float(xp.sum(weight))
    if total == 0:
        return GramStats.empty(X.shape[1])
    mean_x = to_host(transpose_product(X, weight)) / total
    mean_y = float(weight @ y) / total
    yc = y - mean_y
    wyc = yc * weight
    sxx = to_host(sparse_weighted_gram(X, weight)) - total * np.outer(mean_x, mean_x)
    return GramStats(total, mean_x, mean_y, sxx, to_host(transpose_product(X, wyc)),
                     float(wyc @ yc))


@row_additive
def gram(part):
    """Centred weighted Gram statistics of one partition: one read of ``X``."""
    X, y, weight = part
    X = kernel_matrix(X)
    if is_sparse_matrix(X):
        return _sparse_gram(X, y, weight)
    if is_host_dense(X):
        if X.shape[0] == 0:
            return GramStats.empty(X.shape[1])
        moments = augmented_gram(X, y, weight)
        return GramStats.empty(X.shape[1]) if moments is None else GramStats(*moments)
    xp = namespace(X)
    total = GramStats.empty(X.shape[1])
    for start, stop in row_blocks(X, products=True):
        X_b, y_b = X[start:stop, :], y[start:stop]
        w_b = rows_between(weight, start, stop)
        block_weight = float(stop - start) if w_b is None else float(xp.sum(w_b))
        if block_weight == 0:
            continue
        if w_b is None:
            mean_x = xp.mean(X_b, axis=0)
            mean_y = float(xp.mean(y_b))
        else:
            mean_x = (w_b @ X_b) / block_weight
            mean_y = float(w_b @ y_b) / block_weight
        xc = X_b - mean_x
        yc = y_b - mean_y
        wyc = yc if w_b is None else yc * w_b
        sxx = xc.T @ xc if w_b is None else (xc * w_b[:, None]).T @ xc
        total = total + GramStats(block_weight, to_host(mean_x), mean_y, to_host(sxx),
                                  to_host(xc.T @ wyc), float(wyc @ yc))
    return total
