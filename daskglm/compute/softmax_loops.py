"""The compiled row loop of the multinomial (softmax) loss and gradient (numba).

:func:`daskglm.compute.multinomial.multinomial_loss_grad` on a dense numpy partition.
Written as block products (``X_b @ W.T``, the softmax of the ``(rows, K)`` predictors,
``R.T @ X_b``), one evaluation reads each block twice and spends most of its time in
numpy's reductions along the short class axis.  :func:`softmax_rows` takes each row once, while it is in the
first-level cache: its ``K`` predictors, their softmax, the loss, and the row times each
class's residual added to that class's gradient.

Imported on the first multinomial evaluation of a dense partition; ``cache=True`` lets
every new worker process load the compiled code from the on-disk cache.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["softmax_rows", "BLOCK_ROWS"]

#: Rows summed into a partial sum before it is added to the total: the round-off of the
#: sums then grows with the number of blocks, not of rows.
BLOCK_ROWS = 128

#: Reassociation lets the compiler vectorise each row's dot products (a fixed order for a
#: given machine, so still reproducible); no assumption about NaN or infinities is made.
_FAST = {"reassoc", "contract", "nsz"}


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def softmax_rows(X, y, weight, coef, intercept, grad_coef, grad_intercept):
    """Add the gradient of the weighted softmax loss of ``X``'s rows to ``grad_coef`` and
    ``grad_intercept``; return the loss sum.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64
        Each element is converted to float64 as it is read.
    y : ndarray of shape (n,)
        Class indices (floats); any other value is a ValueError.
    weight : ndarray of shape (n,) or (0,)
        float64 row weights; an empty array weighs every row 1.
    coef : ndarray of shape (K, d), float64
    intercept : ndarray of shape (K,), float64
        Zeros for a model without intercepts.
    grad_coef : ndarray of shape (K, d), float64
    grad_intercept : ndarray of shape (K,), float64
        Updated in place: ``sum_i w_i (softmax(eta_i) - onehot(y_i))`` times the row, and
        without it.

    Returns
    -------
    float
        ``sum_i w_i (logsumexp(eta_i) - eta_i[y_i])``.
    """
    n, d = X.shape
    n_classes = coef.shape[0]
    unit = weight.shape[0] == 0
    eta = np.empty(n_classes)
    block_coef = np.zeros((n_classes, d))
    block_intercept = np.zeros(n_classes)
    loss = 0.0
    for start in range(0, n, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, n)
        block_coef[:] = 0.0
        block_intercept[:] = 0.0
        block_loss = 0.0
        for i in range(start, stop):
            for k in range(n_classes):
                total = intercept[k]
                for j in range(d):
                    total += np.float64(X[i, j]) * coef[k, j]
                eta[k] = total
            top = eta[0]
            for k in range(1, n_classes):
                top = max(top, eta[k])
            if not math.isfinite(top):
                top = 0.0
            norm = 0.0
            for k in range(n_classes):
                norm += math.exp(eta[k] - top)
            log_norm = top + math.log(norm)
            label = int(y[i])
            if label < 0 or label >= n_classes or label != y[i]:
                raise ValueError("y holds a value that is not a class index.")
            w = 1.0 if unit else weight[i]
            block_loss += w * (log_norm - eta[label])
            for k in range(n_classes):
                residual = w * (math.exp(eta[k] - log_norm) - (1.0 if k == label else 0.0))
                block_intercept[k] += residual
                for j in range(d):
                    block_coef[k, j] += residual * np.float64(X[i, j])
        loss += block_loss
        grad_coef += block_coef
        grad_intercept += block_intercept
    return loss
