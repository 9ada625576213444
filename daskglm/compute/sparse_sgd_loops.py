"""The compiled loop of local SGD on a CSR partition (numba): lazy L2, sparse steps.

:func:`daskglm.compute.stochastic.local_sgd` runs a round of ``K`` SGD steps on one
partition.  On hashed rows (a few dozen non-zeros among 2^18 or more columns) a step must
cost what its rows hold, not what the model holds: :func:`lazy_csr_steps` keeps the
coefficients as ``scale * values`` (:class:`~daskglm.compute.sparse_vectors.ScaledVector`),
so that the L2 part of a step, ``coef <- (1 - rate * alpha) coef``, changes ``scale`` only,
and the gradient part changes the entries of the columns the step's rows hold.  It runs the
steps of the Python loop it replaces (``_lazy_local_steps`` of
:mod:`~daskglm.compute.stochastic`) with the same rows, rates and gradient scales, up to
round-off, at well under a microsecond a non-zero instead of hundreds of microseconds of
Python a step.

Each row's loss and derivative come from the family formulas of :mod:`.family_formulas`
(integer family codes, as there, so that numba's on-disk cache serves every worker
process; a change there must touch this file too).
"""

from __future__ import annotations

import numba
import numpy as np

from .family_formulas import family_rows

__all__ = ["lazy_csr_steps"]

#: ``scale`` is folded into ``values`` when its magnitude falls below this (as
#: :attr:`~daskglm.compute.sparse_vectors.ScaledVector.RESCALE_BELOW`).
_RESCALE_BELOW = 1e-9


@numba.njit(cache=True, nogil=True)
def lazy_csr_steps(indptr, indices, data, y, weight, rows, bounds, factors, rates, family,
                   parameter, fit_intercept, alpha, params):
    """Run ``K`` SGD steps with an L2 penalty of strength ``alpha`` on a CSR partition.

    Step ``k`` reads rows ``rows[bounds[k]:bounds[k + 1]]`` (sorted here, in place), takes
    their loss and derivatives at the current point, multiplies the coefficients by
    ``1 - rates[k] * alpha`` and moves those of the rows' columns by ``-rates[k] *
    factors[k]`` times the rows' gradient sum, and the intercept by the same times the
    derivatives' sum.

    Parameters
    ----------
    indptr, indices, data : ndarray
        The partition's CSR arrays.
    y : ndarray of shape (n,)
    weight : ndarray of shape (n,) or (0,)
        Sample weights; length 0 for none.
    rows : ndarray of int, writable
    bounds : ndarray of int64, shape (K + 1,)
    factors, rates : ndarray of float64, shape (K,)
    family : int
        Family code of :mod:`.fused_loops`.
    parameter : float
    fit_intercept : bool
    alpha : float
        The L2 strength (0 for no penalty).
    params : ndarray of float64
        The starting point; not modified.

    Returns
    -------
    moved : ndarray of float64
    loss, batch_weight, penalty : float
        Sums over the steps of the rows' loss, their sample weight, and their sample weight
        times the penalty at the point the loss was taken at.
    """
    n_steps = rates.shape[0]
    d = params.shape[0] - (1 if fit_intercept else 0)
    weighted = weight.shape[0] > 0
    most = 1
    for k in range(n_steps):
        most = max(most, bounds[k + 1] - bounds[k])
    values = params[:d].copy()
    scale = 1.0
    sumsq = 0.0
    for j in range(d):
        sumsq += values[j] * values[j]
    intercept = params[d] if fit_intercept else 0.0
    batch_y = np.empty(most)
    eta = np.empty(most)
    row_loss = np.empty(most)
    residual = np.empty(most)
    work = np.empty((3, most))
    scale_bits = np.empty(most, dtype=np.int64)
    no_curvature = np.empty(0)
    loss = batch_weight = penalty = 0.0
    for k in range(n_steps):
        start, stop = bounds[k], bounds[k + 1]
        count = stop - start
        rate = rates[k]
        step_rate = rate * factors[k]
        if count > 0:
            chosen = rows[start:stop]
            chosen.sort()
            for i in range(count):
                row = chosen[i]
                value = 0.0
                for p in range(indptr[row], indptr[row + 1]):
                    value += data[p] * values[indices[p]]
                eta[i] = scale * value + intercept
                batch_y[i] = y[row]
            family_rows(family, parameter, batch_y, eta, count, row_loss, residual,
                         no_curvature, work, scale_bits)
            step_weight = 0.0
            for i in range(count):
                w = weight[chosen[i]] if weighted else 1.0
                row_loss[i] *= w
                residual[i] *= w
                loss += row_loss[i]
                step_weight += w
            batch_weight += step_weight
            penalty += step_weight * 0.5 * alpha * scale * scale * sumsq
        scale *= 1.0 - rate * alpha
        if abs(scale) < _RESCALE_BELOW:
            sumsq = 0.0
            for j in range(d):
                values[j] *= scale
                sumsq += values[j] * values[j]
            scale = 1.0
        if count > 0:
            chosen = rows[start:stop]
            residual_sum = 0.0
            for i in range(count):
                r = residual[i]
                residual_sum += r
                row = chosen[i]
                for p in range(indptr[row], indptr[row + 1]):
                    j = indices[p]
                    old = values[j]
                    new = old - step_rate * r * data[p] / scale
                    values[j] = new
                    sumsq += new * new - old * old
            if sumsq < 0.0:
                sumsq = 0.0
            if fit_intercept:
                intercept -= step_rate * residual_sum
    moved = np.empty(params.shape[0])
    for j in range(d):
        moved[j] = scale * values[j]
    if fit_intercept:
        moved[d] = intercept
    return moved, loss, batch_weight, penalty


def compiled_lazy_steps_apply(part, counts, config):
    """Whether :func:`compiled_lazy_steps` runs ``counts`` steps on ``part``: a scipy CSR
    partition of float values with float targets and weights, a family with a compiled
    formula, and at least one step (the caller has checked the lazy path's conditions:
    no penalty or L2, one rate for every coefficient, no running mean)."""
    import scipy.sparse as sp

    from .blocked import pointwise_for

    X, y, weight = part[:3]
    return (sp.issparse(X) and X.format == "csr" and X.dtype in (np.float32, np.float64)
            and isinstance(y, np.ndarray) and y.dtype in (np.float32, np.float64)
            and (weight is None or (isinstance(weight, np.ndarray)
                                    and weight.dtype in (np.float32, np.float64)))
            and len(counts) > 0 and pointwise_for(config.family) is not None)


def compiled_lazy_steps(part, index, first_step, counts, params, rule_state, weight, config,
                        epoch, offset):
    """The lazy L2 steps of :mod:`~daskglm.compute.stochastic` in one call of
    :func:`lazy_csr_steps`: the same rows (step ``k`` the next ``counts[k]`` of the
    partition's order of the epoch, sorted), the same rates (``config.rule`` called once
    per step) and gradient scales.

    Returns
    -------
    params, rate, rule_state, loss, batch_weight, penalty
    """
    from ..optim.schedules import step_rates
    from .blocked import pointwise_for
    from .sampling import epoch_order

    X, y, weight_rows = part[:3]
    n_steps = len(counts)
    bounds = np.minimum(offset + np.concatenate(([0], np.cumsum(counts, dtype=np.int64))),
                        X.shape[0])
    rows = np.array(epoch_order(X.shape[0], config.seed, epoch, index,
                                config.shuffle)[bounds[0]:bounds[-1]],
                    dtype=np.int64)
    bounds = bounds - bounds[0]
    steps = np.arange(first_step, first_step + n_steps)
    n_batch = np.minimum(config.batch_size, config.n_rows - (steps - epoch) * config.batch_size)
    factors = config.n_rows / (n_batch * weight)
    rates, rate, rule_state = step_rates(config.rule, rule_state, steps)
    code, parameter = pointwise_for(config.family)
    moved, loss, batch_weight, penalty = lazy_csr_steps(
        X.indptr, X.indices, X.data, y, np.empty(0) if weight_rows is None else weight_rows,
        rows, bounds, factors.astype(np.float64), rates, code, parameter,
        bool(config.fit_intercept), _l2_strength(config.penalty),
        np.asarray(params, dtype=np.float64))
    return moved, rate, rule_state, loss, batch_weight, penalty


def _l2_strength(penalty):
    """The strength ``alpha`` of an L2 penalty (its constant curvature), 0 for none."""
    return float(np.max(penalty.hess_diag(np.zeros(1)), initial=0.0))
