"""Per-partition kernels of the multinomial (softmax) model, and its standardised coordinates.

The parameter layout is that of :class:`daskglm.model.multinomial.MultinomialProblem`:
``W`` (``K x d``, class by class), then the ``K`` intercepts.  Every evaluation reads
each row block of ``X`` once: ``eta = X_b @ W.T + b`` gives all classes' predictors in one
product and ``R.T @ X_b`` all classes' gradients in another, while ``X_b`` is in cache.
The statistics are :class:`daskglm.compute.kernels.Stats`, summed in the engines' tree
like every other.  Nothing here imports Dask.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..model.multinomial import softmax_loss_and_residual
from .coordinates import Standardised
from .kernels import Stats, _row_blocks, _take

__all__ = [
    "multinomial_loss_grad", "multinomial_loss_grad_hess", "PerClassCoordinates", "class_indices",
]


def _unpack(params, n_features, n_classes, fit_intercept):
    n_coef = n_features * n_classes
    coef = np.asarray(params[:n_coef]).reshape(n_classes, n_features)
    intercept = np.asarray(params[n_coef:]) if fit_intercept else None
    return coef, intercept


def _predictors(X_b, coef, intercept):
    """``X_b @ coef.T (+ intercept)``, shape (rows, K), for dense or CSR blocks."""
    eta = np.asarray(X_b @ coef.T)
    return eta if intercept is None else eta + intercept


def _class_products(X_b, residual):
    """``residual.T @ X_b`` (K x d) for dense or CSR ``X_b``."""
    if sp.issparse(X_b):
        return np.asarray((X_b.T @ residual).T)
    return residual.T @ X_b


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
    d = X.shape[1]
    coef, intercept = _unpack(params, d, n_classes, fit_intercept)
    grad_coef = np.zeros((n_classes, d))
    grad_intercept = np.zeros(n_classes)
    loss = 0.0
    for start, stop in _row_blocks(X):
        X_b = X[start:stop]
        eta = _predictors(X_b, coef, intercept)
        block_loss, residual, _ = softmax_loss_and_residual(y[start:stop], eta,
                                                            _take(weight, start, stop))
        loss += block_loss
        grad_coef += _class_products(X_b, residual)
        grad_intercept += residual.sum(axis=0)
    grad = grad_coef.ravel()
    if fit_intercept:
        grad = np.concatenate([grad, grad_intercept])
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return Stats(total, float(loss), grad)


def _weighted_products(X_b, h):
    """``X_b.T @ diag(h) @ X_b`` (``h`` of any sign) and ``X_b.T @ h``."""
    if sp.issparse(X_b):
        scaled = sp.diags(h) @ X_b
        return np.asarray((X_b.T @ scaled).todense()), np.asarray(X_b.T @ h).ravel()
    return (X_b * h[:, None]).T @ X_b, X_b.T @ h


def multinomial_loss_grad_hess(part, params, n_classes, fit_intercept):
    """Loss, gradient and Hessian sums of one partition: one read of ``X``.

    The Hessian block of classes ``k`` and ``l`` is ``X^T diag(w p_k (delta_kl - p_l)) X``
    (and the matching intercept rows): ``K (K + 1) / 2`` weighted products of each row
    block, so this kernel is for a moderate number of columns and classes.
    """
    X, y, weight = part
    d = X.shape[1]
    K = n_classes
    coef, intercept = _unpack(params, d, K, fit_intercept)
    n_params = (d + int(fit_intercept)) * K
    n_coef = d * K
    grad = np.zeros(n_params)
    hess = np.zeros((n_params, n_params))
    loss = 0.0
    for start, stop in _row_blocks(X, products=True):
        X_b = X[start:stop]
        w_b = _take(weight, start, stop)
        eta = _predictors(X_b, coef, intercept)
        block_loss, residual, prob = softmax_loss_and_residual(y[start:stop], eta, w_b)
        loss += block_loss
        grad[:n_coef] += _class_products(X_b, residual).ravel()
        if fit_intercept:
            grad[n_coef:] += residual.sum(axis=0)
        w = np.ones(X_b.shape[0]) if w_b is None else w_b
        for k in range(K):
            for j in range(k, K):
                h = w * prob[:, k] * ((k == j) - prob[:, j])
                block, col_sums = _weighted_products(X_b, h)
                rows, cols = slice(k * d, (k + 1) * d), slice(j * d, (j + 1) * d)
                hess[rows, cols] += block
                if j != k:
                    hess[cols, rows] += block.T
                if fit_intercept:
                    hess[rows, n_coef + j] += col_sums
                    hess[n_coef + j, rows] += col_sums
                    hess[n_coef + k, n_coef + j] += h.sum()
                    if j != k:
                        hess[cols, n_coef + k] += col_sums
                        hess[n_coef + k, cols] += col_sums
                        hess[n_coef + j, n_coef + k] += h.sum()
    total = float(X.shape[0]) if weight is None else float(weight.sum())
    return Stats(total, float(loss), grad, hess)


class PerClassCoordinates:
    """One :class:`Standardised` map applied to each class's ``(W[k], b[k])``.

    Gradient descent runs in these coordinates on a multinomial problem: every class's
    coefficients see the columns centred and scaled as a single-output problem would.

    Parameters
    ----------
    coordinates : Standardised
        The map of one class's ``(coef[, intercept])``.
    n_features, n_classes : int
    fit_intercept : bool
    """

    def __init__(self, coordinates: Standardised, n_features, n_classes, fit_intercept):
        self.coordinates = coordinates
        self.n_features = n_features
        self.n_classes = n_classes
        self.fit_intercept = fit_intercept

    def _per_class(self, vector):
        """Rows ``(W[k][, b[k]])``, shape (K, d [+ 1])."""
        vector = np.asarray(vector, dtype=float)
        n_coef = self.n_features * self.n_classes
        rows = vector[:n_coef].reshape(self.n_classes, self.n_features)
        if self.fit_intercept:
            rows = np.column_stack([rows, vector[n_coef:]])
        return rows

    def _flat(self, rows):
        coef = rows[:, : self.n_features].ravel()
        return np.concatenate([coef, rows[:, -1]]) if self.fit_intercept else coef.copy()

    def _apply(self, method, vector):
        rows = self._per_class(vector)
        return self._flat(np.stack([getattr(self.coordinates, method)(row) for row in rows]))

    def to_params(self, theta):
        """``theta -> params``."""
        return self._apply("to_params", theta)

    def to_theta(self, params):
        """``params -> theta``."""
        return self._apply("to_theta", params)

    def grad_to_theta(self, grad):
        """A gradient in ``params`` as one in ``theta``."""
        return self._apply("grad_to_theta", grad)

    def grad_to_params(self, theta_grad):
        """The inverse of :meth:`grad_to_theta`."""
        return self._apply("grad_to_params", theta_grad)

    def prox(self, penalty, theta, step):
        """The penalty's proximal operator in ``theta``, class by class (every penalty here
        is separable, so this is the operator of the whole vector)."""
        rows = self._per_class(theta)
        return self._flat(np.stack([self.coordinates.prox(penalty, row, step) for row in rows]))


def class_indices(part, classes):
    """The partition with its labels ``y`` replaced by their indices in sorted ``classes``."""
    X, y, weight = part
    return X, np.searchsorted(classes, y).astype(np.float64), weight
