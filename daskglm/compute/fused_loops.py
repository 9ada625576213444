"""The compiled loop of :func:`daskglm.compute.blocked.fused_loss_grad` (numba).

Imported on the first fused gradient only, so that a worker imports numba when a kernel
needs it.  Every function here is defined at module level with ``cache=True``, and the
family is an integer argument (:data:`GAUSSIAN`, :data:`BINOMIAL`, :data:`POISSON`), not a
compiled function passed in: numba then finds its compiled code in the on-disk cache in
every new worker process instead of compiling it again (about 2 s per process).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..model.numerics import _EXP_SAFE

__all__ = ["GAUSSIAN", "BINOMIAL", "POISSON", "fused_rows"]

GAUSSIAN, BINOMIAL, POISSON = 0, 1, 2

#: Reassociation lets the compiler vectorise each row's dot product (a fixed order for a
#: given machine, so still reproducible); no assumption about NaN or infinities is made.
_FAST = {"reassoc", "contract", "nsz"}

_EXP_SAFE_VALUE = float(_EXP_SAFE)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _pointwise(family, y, eta):
    """``(loss, dloss)`` of one row with linear predictor ``eta``."""
    if family == BINOMIAL:
        # one exp shared by the loss and the probability, as Binomial.loss_and_dloss
        shrink = math.exp(-abs(eta))
        loss = math.log1p(shrink) + max(eta, 0.0) - y * eta
        prob = (1.0 if eta >= 0 else shrink) / (1.0 + shrink)
        return loss, prob - y
    if family == POISSON:
        # exp continued quadratically above _EXP_SAFE, as Poisson.mean and Poisson.dloss
        safe = min(eta, _EXP_SAFE_VALUE)
        over = eta - safe
        scale = math.exp(safe)
        mean = scale * (1.0 + over + 0.5 * over * over)
        return mean - y * eta, scale * (1.0 + over) - y
    residual = eta - y
    return 0.5 * residual * residual, residual


#: Rows summed into a partial sum before it is added to the total: summing in two levels
#: keeps the round-off of the loss and gradient sums near that of numpy's pairwise sums
#: (a plain running sum over ``n`` rows grows its error with ``n``).
BLOCK_ROWS = 128


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def fused_rows(X, y, weight, offset, coef, intercept, family, grad):
    """Add each row's ``r * x`` to ``grad``; return the loss and ``sum(r)``.

    ``weight`` and ``offset`` of length 0 stand for none.  Rows are summed in blocks of
    :data:`BLOCK_ROWS`, and the blocks' sums into the totals, in row order.
    """
    n, d = X.shape
    loss = 0.0
    intercept_grad = 0.0
    block_grad = np.zeros(d)
    for start in range(0, n, BLOCK_ROWS):
        block_loss = 0.0
        block_intercept = 0.0
        block_grad[:] = 0.0
        for i in range(start, min(start + BLOCK_ROWS, n)):
            row = X[i]
            eta = intercept
            for j in range(d):
                eta += row[j] * coef[j]
            if offset.shape[0]:
                eta += offset[i]
            row_loss, residual = _pointwise(family, y[i], eta)
            if weight.shape[0]:
                row_loss *= weight[i]
                residual *= weight[i]
            block_loss += row_loss
            block_intercept += residual
            for j in range(d):
                block_grad[j] += residual * row[j]
        loss += block_loss
        intercept_grad += block_intercept
        for j in range(d):
            grad[j] += block_grad[j]
    return loss, intercept_grad
