"""The compiled loop of local SGD on a dense partition (numba): a round's steps in one call.

:func:`daskglm.compute.local_sgd_rounds.local_sgd` runs a round of ``K`` SGD steps on one
partition.  With a few rows per step, each step written in numpy costs tens of
microseconds of Python for well under one of arithmetic; :func:`local_steps` runs all
``K`` steps in one compiled call, with the arithmetic of the Python loop it replaces: each
step's rows gathered in sorted order (as :func:`~daskglm.compute.sampling.draw_rows` gives
them), their loss and gradient sums formed by the loop of the fused gradient
(:func:`.fused_loops.fused_rows_into`, summed in its order), then the step, the L2 clip and the L1 prox as
:func:`~daskglm.compute.stochastic.sgd_step`, :func:`~daskglm.compute.stochastic.l1_prox`
and :func:`~daskglm.compute.stochastic.average_update` take them.  What depends on Python
objects (the step rule's rates, the gradient scales, the epoch's order of the rows) is
computed by the caller and passed in as arrays.  A step of a few rows costs well under a
microsecond here, against tens of microseconds in the Python loop.

Imported on the first compiled round only.  As in :mod:`.fused_loops`, the family is an
integer code with a float parameter, so that every worker process finds the compiled
loop in numba's on-disk cache (``cache=True``).  That cache keys a function on its own
file only: the cached loop here contains :mod:`.fused_loops`, :mod:`.family_formulas` and
:mod:`.vector_math` compiled in, and a change to any of them must touch this file too (or
clear its ``__pycache__``).
"""

from __future__ import annotations

import numba
import numpy as np

from .fused_loops import fused_rows_into, fused_workspace

__all__ = ["local_steps"]

#: Steps of at most this many rows sort them by insertion (numba's ``sort`` costs about
#: 0.2 us a call).
_INSERTION_SORT_ROWS = 32


@numba.njit(cache=True, nogil=True)
def local_steps(X, y, weight, rows, bounds, factors, rates, family, parameter, fit_intercept,
                l2, l1, prox, params, average, average_from, first_step):
    """Run ``K`` SGD steps on the rows of a dense partition.

    Step ``k`` reads rows ``rows[bounds[k]:bounds[k + 1]]`` (sorted here, in place), takes
    their loss and gradient sums at the current point ``x``, scales the gradient by
    ``factors[k]``, adds the L2 part of the penalty, ``l2 * coef``, and moves by
    ``-rates[k]`` times that; where ``rates[k] * l2 > 1`` the coefficients are set to zero
    (``_clip_l2_shrink``).  Before every step but the first, ``x`` is the previous step's
    result soft-thresholded by ``rates[k - 1] * l1`` when ``prox``, and enters the
    running mean ``average`` as the iterate of step ``first_step + k - 1`` when
    ``average_from`` (>= 0) says so.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64
    y : ndarray of shape (n,)
    weight : ndarray of shape (n,) or (0,)
        Sample weights; length 0 for none.
    rows : ndarray of int, writable
        The rows of the ``K`` steps, one after the other.
    bounds : ndarray of int64, shape (K + 1,)
    factors, rates : ndarray of float64, shape (K,)
        Each step's gradient scale and learning rate.
    family : int
        Family code of :mod:`.fused_loops`.
    parameter : float
        The family's parameter (:func:`~daskglm.compute.blocked.pointwise_for`).
    fit_intercept : bool
        Whether ``params`` ends with an (unpenalised) intercept.
    l2, l1 : float
        Strengths of the penalty's L2 part (``alpha / 2 * ||coef||^2``) and L1 part.
    prox : bool
        Whether to soft-threshold between steps (a penalty with an L1 part).
    params : ndarray of float64, shape (d,) or (d + 1,)
        The starting point; not modified.
    average : ndarray of float64, shape of ``params``
        The running mean of the iterates, updated in place.
    average_from : int
        First step whose iterate enters the mean; -1 for none.
    first_step : int
        The number of the first step.

    Returns
    -------
    moved : ndarray of float64
        The last step's result, before its soft-thresholding.
    loss, batch_weight, penalty : float
        Sums over the steps of the rows' loss, of their sample weight, and of their
        sample weight times the penalty at the point the loss was taken at.
    averaged : bool
        Whether ``average`` was updated.
    """
    n_steps = rates.shape[0]
    d = X.shape[1]
    weighted = weight.shape[0] > 0
    most = 0
    for k in range(n_steps):
        most = max(most, bounds[k + 1] - bounds[k])
    batch = np.empty((most, d), dtype=X.dtype)
    batch_y = np.empty(most)
    batch_weight_rows = np.empty(most if weighted else 0)
    no_offset = np.empty(0)
    buffers, scale_bits, block_grad = fused_workspace(d, X.itemsize)
    x = params.copy()
    moved = params.copy()
    coef = np.empty(d)
    grad = np.empty(d)
    loss = batch_weight = penalty = 0.0
    averaged = False
    for k in range(n_steps):
        if k > 0:
            x[:] = moved
            if prox:
                threshold = rates[k - 1] * l1
                for j in range(d):
                    x[j] = np.sign(x[j]) * np.maximum(np.abs(x[j]) - threshold, 0.0)
            step = first_step + k - 1
            if average_from >= 0 and step >= average_from:
                iterates = step - average_from + 1
                if iterates == 1:
                    average[:] = x
                else:
                    for j in range(x.shape[0]):
                        average[j] = average[j] + (x[j] - average[j]) / iterates
                averaged = True
        start, stop = bounds[k], bounds[k + 1]
        count = stop - start
        grad[:] = 0.0
        step_loss = intercept_grad = step_weight = 0.0
        if count > 0:
            chosen = rows[start:stop]
            _sort(chosen)
            for i in range(count):
                row = chosen[i]
                for j in range(d):
                    batch[i, j] = X[row, j]
                batch_y[i] = y[row]
                if weighted:
                    batch_weight_rows[i] = weight[row]
            coef[:] = x[:d]
            intercept = x[d] if fit_intercept else 0.0
            step_loss, intercept_grad = fused_rows_into(
                batch[:count], batch_y[:count], batch_weight_rows[:count], no_offset, coef,
                intercept, family, parameter, grad, buffers, scale_bits, block_grad)
            if weighted:
                for i in range(count):
                    step_weight += batch_weight_rows[i]
            else:
                step_weight = float(count)
        loss += step_loss
        batch_weight += step_weight
        if step_weight != 0.0:
            penalty += step_weight * _penalty_value(x, d, l2, l1)
        rate = rates[k]
        factor = factors[k]
        for j in range(d):
            moved[j] = x[j] - rate * (grad[j] * factor + l2 * x[j])
        if fit_intercept:
            moved[d] = x[d] - rate * (intercept_grad * factor)
        if rate * l2 > 1.0:
            moved[:d] = 0.0
    return moved, loss, batch_weight, penalty, averaged


@numba.njit(cache=True, nogil=True)
def _sort(values):
    """Sort ``values`` in place."""
    if values.shape[0] > _INSERTION_SORT_ROWS:
        values.sort()
        return
    for i in range(1, values.shape[0]):
        value = values[i]
        j = i - 1
        while j >= 0 and values[j] > value:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = value


@numba.njit(cache=True, nogil=True)
def _penalty_value(x, d, l2, l1):
    """``l1 * ||coef||_1 + l2 / 2 * ||coef||^2`` of the first ``d`` entries of ``x``."""
    absolute = squares = 0.0
    for j in range(d):
        absolute += abs(x[j])
        squares += x[j] * x[j]
    value = 0.0
    if l1 != 0.0:
        value += l1 * absolute
    if l2 != 0.0:
        value += 0.5 * l2 * squares
    return value
