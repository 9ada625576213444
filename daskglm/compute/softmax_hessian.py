"""The multinomial model's Hessian on a dense numpy partition of few columns.

The block of classes ``k`` and ``l`` is ``X^T diag(h_kl) X`` with ``h_kl = w p_k
(delta_kl - p_l)``, for ``P = K (K + 1) / 2`` pairs.  Formed pair by pair, each is a
product of a ``rows x d`` block with itself: at a dozen columns BLAS runs such small
products far below its speed, and a 20-class model makes 210 of them a block.  Here each
row's products ``x_a x_b`` (``a <= b``: ``T = d (d + 1) / 2`` of them) are formed once a
block, into ``Q`` (``rows x T``), and every pair's entries come from one product ``Q^T H``
with the ``rows x P`` matrix ``H`` of the pairs' weights; ``X^T H`` gives the intercepts'
rows.  The same arithmetic as the pairwise products, in two well-shaped matrix products.
"""

from __future__ import annotations

import numpy as np

from ..model.multinomial import softmax_loss_and_residual
from .kernels import Stats
from .row_blocks import rows_between, total_weight

__all__ = ["pays", "dense_softmax_loss_grad_hess"]

#: Rows of a block, at most: each block costs some twenty numpy calls.
BLOCK_ROWS = 8192
#: Bytes of ``Q^T`` at most (fewer rows a block for many columns).
PRODUCTS_BYTES = 1 << 25


def pays(n_features, n_classes):
    """Whether :func:`dense_softmax_loss_grad_hess` is faster than a product per pair.

    Its speed over the pairwise products, measured on one thread (the development
    machine, 1e5 to 5e5 rows): 1.9x at 12 columns and 5 classes, 3.0x at 12 and at 20
    columns with 20 classes, 2.1x at 32 columns with 10 classes, 2.1x at 64 with 20; 1.0x
    at 48 columns with 5 classes and 0.8x at 64 (there each pair's product is large
    enough for BLAS to run at speed).
    """
    return n_features <= 32 or (n_classes >= 10 and n_features <= 64)


def dense_softmax_loss_grad_hess(X, y, weight, params, n_classes, fit_intercept):
    """Loss, gradient and Hessian sums of the softmax loss on a numpy partition ``X``
    (``n x d``), in the parameter layout of
    :func:`daskglm.compute.multinomial.multinomial_loss_grad_hess`; one read of ``X``."""
    n, d = X.shape
    K = n_classes
    params = np.asarray(params, dtype=np.float64)
    coef = params[: K * d].reshape(K, d)
    intercept = params[K * d:] if fit_intercept else None
    first, second = np.triu_indices(d)
    pair_k, pair_l = np.triu_indices(K)
    on_diagonal = np.flatnonzero(pair_k == pair_l)
    P, T = pair_k.size, first.size
    pair_sums = np.zeros((T, P))  # sum over rows of x_a x_b h_kl
    column_sums = np.zeros((d, P))  # sum over rows of x_a h_kl
    weight_sums = np.zeros(P)
    grad_coef, grad_intercept = np.zeros((K, d)), np.zeros(K)
    loss = 0.0
    step = max(64, min(BLOCK_ROWS, PRODUCTS_BYTES // (8 * T)))
    products = np.empty((T, min(step, n)))  # Q^T: each product of columns contiguous
    for start in range(0, n, step):
        stop = min(start + step, n)
        columns = np.ascontiguousarray(X[start:stop].T, dtype=np.float64)  # d x rows
        w_b = rows_between(weight, start, stop)
        eta_t = coef @ columns  # K x rows: each class's predictors contiguous
        if intercept is not None:
            eta_t += intercept[:, None]
        block_loss, residual, prob = softmax_loss_and_residual(y[start:stop], eta_t.T, w_b)
        loss += block_loss
        grad_coef += residual.T @ columns.T
        grad_intercept += residual.sum(axis=0)
        prob_t = prob.T  # contiguous: the softmax keeps eta's layout
        weighted = prob_t if w_b is None else prob_t * w_b
        h_t = -weighted[pair_k] * prob_t[pair_l]  # H^T: P x rows
        h_t[on_diagonal] += weighted
        Q_t = products[:, : stop - start]
        offset = 0
        for a in range(d):
            np.multiply(columns[a], columns[a:], out=Q_t[offset:offset + d - a])
            offset += d - a
        pair_sums += Q_t @ h_t.T
        column_sums += columns @ h_t.T
        weight_sums += h_t.sum(axis=1)
    hess = _assemble(pair_sums, column_sums, weight_sums, d, K, fit_intercept,
                     (first, second), (pair_k, pair_l))
    grad = grad_coef.ravel()
    if fit_intercept:
        grad = np.concatenate([grad, grad_intercept])
    return Stats(total_weight(X, weight), float(loss), grad, hess)


def _assemble(pair_sums, column_sums, weight_sums, d, K, fit_intercept, upper, pairs):
    """The full Hessian from the pairs' sums (``upper``: the ``(a, b)`` of ``Q``'s
    columns; ``pairs``: the ``(k, l)`` of ``H``'s)."""
    n_coef = d * K
    size = n_coef + (K if fit_intercept else 0)
    hess = np.zeros((size, size))
    block = np.empty((d, d))
    for index, (k, j) in enumerate(zip(*pairs)):
        block[upper] = pair_sums[:, index]
        block.T[upper] = pair_sums[:, index]
        rows, cols = slice(k * d, (k + 1) * d), slice(j * d, (j + 1) * d)
        hess[rows, cols] = block
        hess[cols, rows] = block
        if fit_intercept:
            sums, total = column_sums[:, index], weight_sums[index]
            hess[rows, n_coef + j] = hess[n_coef + j, rows] = sums
            hess[cols, n_coef + k] = hess[n_coef + k, cols] = sums
            hess[n_coef + k, n_coef + j] = hess[n_coef + j, n_coef + k] = total
    return hess
