"""Fused one-read kernels for dense numpy partitions (the gradient and the Gram statistics),
and kernels for CSR ones (:func:`csr_loss_grad`, :func:`fused_csr_loss_grad_hess`).

A gradient round needs ``eta = X @ coef``, the family's loss and derivative ``r`` at
``eta``, and ``X.T @ r``.  Done as three whole-partition steps, ``X`` is read from memory
twice and the family's elementwise work makes several passes over ``n`` temporaries.  Here
each row is read from memory once: :func:`fused_loss_grad` is a compiled loop that forms
the row's ``eta``, its loss and derivative, and adds ``r * x`` to the gradient while the
row is in the cache (a chunk of rows at a time, so that the family's ``exp`` and ``log1p``
vectorise; :mod:`.fused_loops`), and nothing of
length ``n`` is allocated.  :func:`fused_loss_grad_hess` adds the Hessian: per row block,
the same compiled loop also writes the rows scaled by the square roots of their curvatures
to a cache-sized buffer, and BLAS's symmetric product of that buffer is the block's
``X^T diag(h) X``.  Both run for the families with a compiled pointwise loss
(:func:`pointwise_for`: canonical Gaussian, Binomial and Poisson, and the Gamma, Tweedie
and negative binomial with the log link); the others keep the cache-blocked path of
:mod:`daskglm.compute.kernels`.

:func:`augmented_gram` forms ``X^T W X``, ``X^T W y``, the weighted column sums and
``y^T W y`` with one symmetric product per row block of the augmented, shifted matrix
``sqrt(w) [X - c, 1, y - c_y]``, built in a cache-sized buffer (``c``: the means of the
partition's first block; shifting by a point near the mean keeps the centred moments
accurate, see :func:`augmented_gram`).

Reproducibility: the loops run over rows in order and the block sizes depend on the
number of columns only, so every result is the same run to run, whatever the machine's
thread count or the cluster's size.  float32 ``X`` stays float32: the compiled loop
converts each element as it reads it and accumulates in float64; the Gram converts each
cache-sized block to float64 before its product (the Gram squares the condition number,
so float32 products would lose what float32 storage keeps).  Nothing in this module
allocates a float64 copy of a float32 ``X``.
"""

from __future__ import annotations

import threading

import numpy as np

from .loss_codes import loss_code

__all__ = ["fused_loss_grad", "csr_loss_grad", "csr_loss_grads", "fused_loss_grads", "fused_loss_grad_hess",
           "fused_csr_loss_grad_hess", "fused_categorical_loss_grad",
           "fused_categorical_loss_grad_hess", "pointwise_for",
           "augmented_gram", "gram_block_rows", "warm_up", "load_loops"]

#: Bytes of the augmented block of :func:`augmented_gram` (at 8 bytes per element): large
#: enough for BLAS's symmetric product to run near its full rate, small enough for the
#: second-level cache of most CPUs.  Chosen by measurement (50 columns: 512 to 8,192 rows
#: per block were tried; 2,000 to 4,000 were fastest).
GRAM_BLOCK_BYTES = 3 << 19

def gram_block_rows(n_features):
    """Rows per block of :func:`augmented_gram`: at least the augmented width."""
    width = n_features + 2
    return max(width, GRAM_BLOCK_BYTES // (8 * width))


def pointwise_for(family):
    """``(code, parameter)`` of ``family``'s compiled pointwise loss in :mod:`.family_formulas`,
    or None when it has none: the family names it (:meth:`Family.compiled_loss`), and
    :func:`~daskglm.compute.loss_codes.loss_code` gives its code.  ``parameter`` is the
    Tweedie power or the negative binomial's ``alpha``, 0 for the others."""
    return loss_code(family)


_NONE = np.empty(0)

#: The dtypes of ``X`` whose compiled loop this process has started to load.
_WARMED: set[str] = set()
_WARMED_LOCK = threading.Lock()


def load_loops(dtype):
    """Load (or compile) the loops of a first fit on dense ``X`` of ``dtype``: the column
    moments of the validation round and the fused gradient.  Blocking."""
    from .fused_loops import fused_rows
    from .moment_loops import weighted_moments

    X = np.zeros((1, 1), dtype=dtype)
    weighted_moments(X, _NONE, np.empty(0, dtype=np.intp), np.zeros((1, 1)), np.zeros((1, 1)))
    fused_rows(X, np.zeros(1), _NONE, _NONE, np.zeros(1), 0.0, 0, 0.0, np.zeros(1))


def warm_up(dtype):
    """Start :func:`load_loops` for ``X`` of ``dtype`` in a background thread.

    A new process's first compiled loop costs about 0.2 s (numba's compiler context),
    each later one 0.01 to 0.03 s (read from numba's cache).  The partition packers call
    this, so that a new worker loads them while it packs and validates its partitions
    instead of in its first gradient (:mod:`daskglm.preload` does it when the worker
    starts).  Once per dtype and process; a call that finds it started returns at once.
    """
    key = np.dtype(dtype).str
    with _WARMED_LOCK:
        if key in _WARMED:
            return
        _WARMED.add(key)
    threading.Thread(target=load_loops, args=(np.dtype(dtype),), daemon=True,
                     name="daskglm-fused-warm-up").start()


def fused_loss_grad(X, y, weight, offset, coef, intercept, pointwise):
    """Loss and gradient sums of a dense partition in one read of ``X``.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64, C-contiguous
    y : ndarray of shape (n,), float64
    weight, offset : ndarray of shape (n,), float64, or None
    coef : ndarray of shape (d,)
    intercept : float
        Added to every linear predictor (0.0 without one).
    pointwise : tuple of (int, float)
        The family's code and parameter, from :func:`pointwise_for`.

    Returns
    -------
    loss : float
    grad : ndarray of shape (d,), float64
        ``X.T @ r`` with ``r`` the (weighted) derivatives.
    intercept_grad : float
        ``sum(r)``.
    """
    from .fused_loops import fused_rows

    grad = np.zeros(X.shape[1])
    code, parameter = pointwise
    loss, intercept_grad = fused_rows(
        X, y, _NONE if weight is None else weight, _NONE if offset is None else offset,
        np.ascontiguousarray(coef, dtype=np.float64), float(intercept), code, parameter, grad)
    return float(loss), grad, float(intercept_grad)


def csr_loss_grad(X, y, weight, offset, coef, intercept, pointwise):
    """:func:`fused_loss_grad` of a scipy CSR partition (the same returns), in two passes
    over its stored values: ``X @ coef``, the family's compiled formula on all rows
    (:func:`~.fused_sparse_loops.family_rows_of`), then ``X.T @ r``.  Measured on hashed
    rows (39 stored values a row, 2**12 to 2**22 columns) and on random CSR designs (20 to
    1,000 columns), it is 2 to 3 times as fast as one compiled pass forming each row's
    predictor and product in turn, whose reads of ``coef`` and writes of ``grad``, both at
    random, compete for the cache."""
    from .fused_sparse_loops import family_rows_of

    code, parameter = pointwise
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    eta = np.asarray(X @ coef, dtype=np.float64).ravel() + float(intercept)
    if offset is not None:
        eta += offset
    residuals = np.empty(X.shape[0])
    loss, intercept_grad = family_rows_of(eta, y, _NONE if weight is None else weight,
                                          code, parameter, residuals)
    return float(loss), np.asarray(X.T @ residuals, dtype=np.float64).ravel(), \
        float(intercept_grad)


def csr_loss_grads(X, y, weights, coefs, intercepts, pointwise):
    """:func:`csr_loss_grad` of several models on one scipy CSR partition, each with its
    own row weights (None: unit), in two passes over its stored values for all of them:
    ``X @ coefs.T``, the family's formula for each model, ``X.T @ R``.  The same sums as
    one call per model, to the bit (scipy sums each row's and each column's products
    in the same order for one vector as for several).

    Returns
    -------
    losses : ndarray of shape (k,)
    grads : ndarray of shape (k, d)
    intercept_grads : ndarray of shape (k,)
    """
    from .fused_sparse_loops import family_rows_of

    code, parameter = pointwise
    k, n = coefs.shape[0], X.shape[0]
    etas = np.asarray(X @ np.ascontiguousarray(coefs.T, dtype=np.float64), dtype=np.float64)
    residuals = np.empty((n, k))
    losses, intercept_grads = np.empty(k), np.empty(k)
    row_residuals = np.empty(n)
    for f in range(k):
        eta = etas[:, f] + float(intercepts[f])
        weight = weights[f]
        losses[f], intercept_grads[f] = family_rows_of(
            eta, y, _NONE if weight is None else weight, code, parameter, row_residuals)
        residuals[:, f] = row_residuals
    grads = np.ascontiguousarray(np.asarray(X.T @ residuals, dtype=np.float64).T)
    return losses, grads, intercept_grads


def fused_csr_loss_grad_hess(X, y, weight, offset, coef, intercept, pointwise):
    """Loss, gradient and Hessian sums of a scipy CSR partition in canonical form (column
    indices sorted within each row), in one pass over its stored values
    (:func:`~.fused_sparse_loops.fused_csr_hessian_rows`).

    Returns
    -------
    loss, grad, intercept_grad, gram_x, col_sums, curvature
        As :func:`fused_loss_grad_hess`: ``gram_x = X^T diag(h) X`` (symmetric),
        ``col_sums = X^T h`` and ``curvature = sum(h)``.
    """
    from .fused_sparse_loops import fused_csr_hessian_rows

    d = X.shape[1]
    grad, col_sums, gram_x = np.zeros(d), np.zeros(d), np.zeros((d, d))
    code, parameter = pointwise
    loss, intercept_grad, curvature = fused_csr_hessian_rows(
        X.indptr, X.indices, X.data, y, _NONE if weight is None else weight,
        _NONE if offset is None else offset, np.ascontiguousarray(coef, dtype=np.float64),
        float(intercept), code, parameter, grad, gram_x, col_sums)
    gram_x += np.triu(gram_x, 1).T
    return float(loss), grad, float(intercept_grad), gram_x, col_sums, float(curvature)


def fused_categorical_loss_grad(X, y, weight, offset, coef, intercept, pointwise):
    """:func:`fused_loss_grad` of a categorical block
    (:class:`~.categorical_matrix.CategoricalMatrix`), in one pass over its numeric values
    and level codes (:func:`~.fused_sparse_loops.fused_categorical_rows`); the same returns."""
    from .fused_sparse_loops import fused_categorical_rows

    grad = np.zeros(X.shape[1])
    code, parameter = pointwise
    loss, intercept_grad = fused_categorical_rows(
        X.numeric, X.columns, y, _NONE if weight is None else weight,
        _NONE if offset is None else offset, np.ascontiguousarray(coef, dtype=np.float64),
        float(intercept), code, parameter, grad)
    return float(loss), grad, float(intercept_grad)


def fused_categorical_loss_grad_hess(X, y, weight, offset, coef, intercept, pointwise):
    """:func:`fused_csr_loss_grad_hess` of a categorical block, in one pass over its
    numeric values and level codes (:func:`~.fused_sparse_loops.fused_categorical_hessian_rows`);
    the same returns."""
    from .fused_sparse_loops import fused_categorical_hessian_rows

    d = X.shape[1]
    grad, col_sums, gram_x = np.zeros(d), np.zeros(d), np.zeros((d, d))
    code, parameter = pointwise
    loss, intercept_grad, curvature = fused_categorical_hessian_rows(
        X.numeric, X.columns, y, _NONE if weight is None else weight,
        _NONE if offset is None else offset, np.ascontiguousarray(coef, dtype=np.float64),
        float(intercept), code, parameter, grad, gram_x, col_sums)
    gram_x += np.triu(gram_x, 1).T
    return float(loss), grad, float(intercept_grad), gram_x, col_sums, float(curvature)


def fused_loss_grads(X, y, weights, coefs, intercepts, pointwise):
    """:func:`fused_loss_grad` of several models on one dense partition, each with its own
    row weights, in one read of ``X`` (:func:`~.fused_loops.fused_rows_many`): the same
    sums as one call per model, to the bit.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64, C-contiguous
    y : ndarray of shape (n,), float64
    weights : ndarray of shape (k, n), float64
    coefs : ndarray of shape (k, d), float64
    intercepts : ndarray of shape (k,), float64
    pointwise : tuple of (int, float)

    Returns
    -------
    losses : ndarray of shape (k,)
    grads : ndarray of shape (k, d)
        ``X.T @ r`` of each model.
    intercept_grads : ndarray of shape (k,)
        ``sum(r)`` of each model.
    """
    from .fused_loops import fused_rows_many

    k = coefs.shape[0]
    grads = np.zeros((k, X.shape[1]))
    losses, intercept_grads = np.empty(k), np.empty(k)
    code, parameter = pointwise
    fused_rows_many(X, y, np.ascontiguousarray(weights, dtype=np.float64), _NONE,
                    np.ascontiguousarray(coefs, dtype=np.float64),
                    np.ascontiguousarray(intercepts, dtype=np.float64), code, parameter, grads,
                    losses, intercept_grads)
    return losses, grads, intercept_grads


def fused_loss_grad_hess(X, y, weight, offset, coef, intercept, pointwise, block_rows,
                         scaled):
    """Loss, gradient and Hessian sums of a dense partition in one read of ``X``.

    Each block of ``block_rows`` rows goes through one compiled loop (predictors, losses,
    derivatives ``r`` and curvatures ``h``, the products ``X_b^T r`` and ``X_b^T h``, and
    ``S_b = diag(sqrt(h)) X_b`` written to ``scaled``) and one symmetric product
    ``S_b^T S_b``, in ``X``'s dtype, added to a float64 accumulator.

    Parameters
    ----------
    X, y, weight, offset, coef, intercept, pointwise
        As :func:`fused_loss_grad`.
    block_rows : int
        Rows per block: at least the number of columns (a smaller product runs below
        BLAS's speed).
    scaled : ndarray of shape (block_rows, d), ``X``'s dtype
        A buffer for the scaled block.

    Returns
    -------
    loss : float
    grad : ndarray of shape (d,), float64
        ``X.T @ r``.
    intercept_grad : float
        ``sum(r)``.
    hess : ndarray of shape (d, d), float64
        ``X.T @ diag(h) @ X``.
    curvature_grad : ndarray of shape (d,), float64
        ``X.T @ h``.
    curvature : float
        ``sum(h)``.
    """
    from .fused_loops import hessian_rows

    n, d = X.shape
    code, parameter = pointwise
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    grad, curvature_grad = np.zeros(d), np.zeros(d)
    hess = np.zeros((d, d))
    loss = intercept_grad = curvature = 0.0
    for start in range(0, n, block_rows):
        stop = min(start + block_rows, n)
        block = scaled[: stop - start]
        block_loss, block_intercept, block_curvature = hessian_rows(
            X[start:stop], y[start:stop], _rows(weight, start, stop),
            _rows(offset, start, stop), coef, float(intercept), code, parameter, grad,
            curvature_grad, block)
        loss += block_loss
        intercept_grad += block_intercept
        curvature += block_curvature
        hess += block.T @ block  # numpy hands a product with its own transpose to syrk
    return float(loss), grad, float(intercept_grad), hess, curvature_grad, float(curvature)


def _rows(values, start, stop):
    """Rows ``start:stop`` of an optional per-row vector; the empty array for none."""
    return _NONE if values is None else values[start:stop]


def augmented_gram(X, y, weight):
    """Shifted weighted second moments of a dense partition, one symmetric product per block.

    With ``c`` and ``c_y`` the (unweighted) means of the first block's rows, every block
    (converted to float64) adds ``A_b^T A_b`` to a float64 accumulator, where
    ``A_b = sqrt(w_b) [X_b - c, 1, y_b - c_y]``.  The shifted sums give the centred ones
    exactly (``Sxx = S'xx - s s^T / W`` with ``s`` the shifted column sums); because ``c``
    is near the partition's mean, the subtraction loses only about ``eps * |mean - c|^2 /
    var`` of relative accuracy, where the unshifted ``X^T W X - W m m^T`` loses
    ``eps * |mean|^2 / var``.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64
    y : ndarray of shape (n,)
    weight : ndarray of shape (n,) or None
        Non-negative.

    Returns
    -------
    total, mean_x, mean_y, sxx, sxy, syy
        Total weight, weighted means and centred cross-products (float64), or None when
        the total weight is zero.
    """
    n, d = X.shape
    rows = gram_block_rows(d)
    first = slice(0, min(n, rows))
    shift_x = X[first].mean(axis=0, dtype=np.float64)
    shift_y = float(y[first].mean())
    # float64 blocks whatever X's dtype: the Gram squares the condition number, so its
    # products need float64 even when X is stored (and read) in float32
    block = np.empty((min(n, rows), d + 2))
    moments = np.zeros((d + 2, d + 2))
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        A = block[: stop - start]
        np.subtract(X[start:stop], shift_x, out=A[:, :d])
        A[:, d] = 1.0
        np.subtract(y[start:stop], shift_y, out=A[:, d + 1], casting="same_kind")
        if weight is not None:
            np.multiply(A, np.sqrt(weight[start:stop])[:, None], out=A, casting="same_kind")
        moments += A.T @ A  # numpy hands A.T @ A to BLAS's symmetric rank-k update
    # the total weight exactly, not from products of square roots
    total = float(n) if weight is None else float(weight.sum())
    if total == 0:
        return None
    sums_x, sum_y = moments[:d, d], moments[d + 1, d]
    mean_x = shift_x + sums_x / total
    mean_y = shift_y + sum_y / total
    sxx = moments[:d, :d] - np.outer(sums_x, sums_x) / total
    sxy = moments[:d, d + 1] - sums_x * (sum_y / total)
    syy = moments[d + 1, d + 1] - sum_y * sum_y / total
    return float(total), mean_x, float(mean_y), sxx, sxy, float(syy)
