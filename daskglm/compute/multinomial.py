"""Per-partition kernels of the multinomial (softmax) model.

The parameter layout is that of :class:`daskglm.model.multinomial.MultinomialProblem`:
``W`` (``K x d``, class by class), then the ``K`` intercepts.  Every evaluation reads
each row block of ``X`` once: ``eta = X_b @ W.T + b`` gives all classes' predictors in one
product and ``R.T @ X_b`` all classes' gradients in another, while ``X_b`` is in cache.
The statistics are :class:`daskglm.compute.kernels.Stats`, summed in the engines' tree
like every other.  The kernels are written against the partition's array API namespace
(numpy, CuPy, or any library of the standard; scipy or ``cupyx`` CSR for sparse ``X``)
and return numpy.  Nothing here imports Dask.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..backend import from_host, namespace, to_host
from ..model.multinomial import softmax_loss_and_residual
from .kernels import Stats, kernel_matrix
from .row_blocks import (
    block_scratch,
    flat_vector,
    is_sparse_matrix,
    row_blocks,
    rows_between,
    total_weight,
    weighted_gram,
)
from .softmax_hessian import dense_softmax_loss_grad_hess
from .softmax_hessian import pays as pair_products_pay
from .tree import row_additive

__all__ = ["multinomial_loss_grad", "multinomial_loss_grad_hess", "class_indices"]


def _unpack(params, X, n_classes, fit_intercept):
    """``(W, b)`` of ``params`` as arrays of ``X``'s library (``b`` None without intercept)."""
    xp = namespace(X)
    n_features = X.shape[1]
    n_coef = n_features * n_classes
    params = from_host(np.asarray(params, dtype=np.float64), like=X)
    coef = xp.reshape(params[:n_coef], (n_classes, n_features))
    intercept = params[n_coef:] if fit_intercept else None
    return coef, intercept


def _predictors(X_b, coef, intercept):
    """``X_b @ coef.T (+ intercept)``, shape (rows, K), for dense or CSR blocks."""
    eta = namespace(X_b).asarray(X_b @ coef.T)
    return eta if intercept is None else eta + intercept


def _class_products(X_b, residual):
    """``residual.T @ X_b`` (K x d) for dense or CSR ``X_b``."""
    if is_sparse_matrix(X_b):
        return namespace(X_b).asarray(X_b.T @ residual).T
    return residual.T @ X_b


@row_additive
def multinomial_loss_grad(part, params, n_classes, fit_intercept):
    """Softmax loss and gradient sums of one partition: one read of ``X`` for all classes.

    Parameters
    ----------
    part : tuple
        ``(X, y, weight)``, ``y`` holding class indices.
    params : ndarray
        ``W`` flattened class by class, then the intercepts when ``fit_intercept``.
    n_classes : int
    fit_intercept : bool

    Returns
    -------
    Stats
        Total weight, loss sum and gradient sum (in the layout of ``params``).
    """
    X, y, weight = part
    X = kernel_matrix(X)
    if type(X) is np.ndarray and X.dtype in (np.float32, np.float64):
        return _dense_loss_grad(X, y, weight, params, n_classes, fit_intercept)
    xp = namespace(X)
    d = X.shape[1]
    coef, intercept = _unpack(params, X, n_classes, fit_intercept)
    grad_coef = xp.zeros((n_classes, d), dtype=xp.float64)
    grad_intercept = xp.zeros(n_classes, dtype=xp.float64)
    loss = 0.0
    for start, stop in row_blocks(X):
        X_b = X[start:stop, :]
        eta = _predictors(X_b, coef, intercept)
        block_loss, residual, _ = softmax_loss_and_residual(y[start:stop], eta,
                                                            rows_between(weight, start, stop))
        loss += block_loss
        grad_coef += _class_products(X_b, residual)
        grad_intercept += xp.sum(residual, axis=0)
    grad = to_host(flat_vector(xp, grad_coef))
    if fit_intercept:
        grad = np.concatenate([grad, to_host(grad_intercept)])
    return Stats(total_weight(X, weight), float(loss), grad)


def _dense_loss_grad(X, y, weight, params, n_classes, fit_intercept):
    """:func:`multinomial_loss_grad` of a numpy partition, in one compiled read of ``X``
    (:mod:`.softmax_loops`)."""
    from .softmax_loops import softmax_rows  # numba, on first use

    d = X.shape[1]
    params = np.asarray(params, dtype=np.float64)
    coef = np.ascontiguousarray(params[: n_classes * d].reshape(n_classes, d))
    intercept = params[n_classes * d:] if fit_intercept else np.zeros(n_classes)
    grad_coef, grad_intercept = np.zeros((n_classes, d)), np.zeros(n_classes)
    row_weight = np.empty(0) if weight is None else np.ascontiguousarray(weight,
                                                                         dtype=np.float64)
    loss = softmax_rows(X, np.ascontiguousarray(y, dtype=np.float64), row_weight, coef,
                        np.ascontiguousarray(intercept), grad_coef, grad_intercept)
    grad = grad_coef.ravel()
    if fit_intercept:
        grad = np.concatenate([grad, grad_intercept])
    return Stats(total_weight(X, weight), float(loss), grad)


def _weighted_products(X_b, h, negative, scratch):
    """``X_b.T @ diag(h) @ X_b`` and ``X_b.T @ h`` for ``h`` all of one sign (all <= 0
    when ``negative``): for a dense block, minus the symmetric product of the block
    scaled by ``sqrt(-h)`` (half a general product's work)."""
    xp = namespace(X_b)
    if sp.issparse(X_b):
        scaled = sp.diags(h) @ X_b
        return np.asarray((X_b.T @ scaled).todense()), flat_vector(xp, X_b.T @ h)
    if is_sparse_matrix(X_b):  # cupyx.scipy.sparse, the same products
        import cupyx.scipy.sparse

        scaled = cupyx.scipy.sparse.diags(h) @ X_b
        return (X_b.T @ scaled).toarray(), flat_vector(xp, X_b.T @ h)
    if not negative:
        return weighted_gram(X_b, h, scratch)
    gram, sums = weighted_gram(X_b, -h, scratch)
    return -gram, -sums


@row_additive
def multinomial_loss_grad_hess(part, params, n_classes, fit_intercept):
    """Loss, gradient and Hessian sums of one partition: one read of ``X``.

    The Hessian block of classes ``k`` and ``l`` is ``X^T diag(w p_k (delta_kl - p_l)) X``
    (and the matching intercept rows): ``K (K + 1) / 2`` weighted products of each row
    block, so this kernel is for a moderate number of columns and classes.  Their
    weights are of one sign each (``>= 0`` on the diagonal, ``<= 0`` off it), so each is
    a symmetric product of the block scaled by the square roots of their magnitudes.  A
    numpy partition of few columns (:func:`.softmax_hessian.pays`) forms them all from one
    product instead (:mod:`.softmax_hessian`).
    """
    X, y, weight = part
    X = kernel_matrix(X)
    if (type(X) is np.ndarray and X.dtype in (np.float32, np.float64)
            and pair_products_pay(X.shape[1], n_classes)):
        return dense_softmax_loss_grad_hess(X, y, weight, params, n_classes, fit_intercept)
    xp = namespace(X)
    d = X.shape[1]
    K = n_classes
    coef, intercept = _unpack(params, X, K, fit_intercept)
    n_params = (d + int(fit_intercept)) * K
    n_coef = d * K
    grad = xp.zeros(n_params, dtype=xp.float64)
    hess = xp.zeros((n_params, n_params), dtype=xp.float64)
    loss = 0.0
    scratch = block_scratch(X, products=True, dtype=X.dtype)
    for start, stop in row_blocks(X, products=True):
        X_b = X[start:stop, :]
        w_b = rows_between(weight, start, stop)
        eta = _predictors(X_b, coef, intercept)
        block_loss, residual, prob = softmax_loss_and_residual(y[start:stop], eta, w_b)
        loss += block_loss
        grad[:n_coef] += flat_vector(xp, _class_products(X_b, residual))
        if fit_intercept:
            grad[n_coef:] += xp.sum(residual, axis=0)
        w = xp.ones(X_b.shape[0], dtype=xp.float64) if w_b is None else w_b
        for k in range(K):
            for j in range(k, K):
                h = w * prob[:, k] * (float(k == j) - prob[:, j])
                block, col_sums = _weighted_products(X_b, h, j != k, scratch)
                rows, cols = slice(k * d, (k + 1) * d), slice(j * d, (j + 1) * d)
                hess[rows, cols] += block
                if j != k:
                    hess[cols, rows] += block.T
                if fit_intercept:
                    hess[rows, n_coef + j] += col_sums
                    hess[n_coef + j, rows] += col_sums
                    hess[n_coef + k, n_coef + j] += xp.sum(h)
                    if j != k:
                        hess[cols, n_coef + k] += col_sums
                        hess[n_coef + k, cols] += col_sums
                        hess[n_coef + j, n_coef + k] += xp.sum(h)
    return Stats(total_weight(X, weight), float(loss), to_host(grad), to_host(hess))


def class_indices(part, classes):
    """The partition with its labels ``y`` replaced by their indices in sorted ``classes``."""
    X, y, weight = part
    xp = namespace(y)
    indices = xp.searchsorted(from_host(np.asarray(classes, dtype=np.float64), y), y)
    return X, xp.astype(indices, xp.float64), weight
