"""scikit-learn's ``dual_gap_`` at a solution found by any solver: one gradient round.

Proximal gradient computes the duality gap of Gaussian L1 / elastic-net problems in every
round (:mod:`.duality_gap`); the other solvers do not, and scikit-learn's Lasso and
ElasticNet report it whatever ``alpha`` and ``l1_ratio`` are (the ridge and least-squares
formulations at ``l1_ratio=0`` and ``alpha=0``).  :func:`gap_at_solution` evaluates the loss
and its gradient at the solution and takes the gap from them.
"""

from __future__ import annotations

import numpy as np

from .base import Objective
from .duality_gap import DualityGap

__all__ = ["gap_at_solution"]


def _gap_of(problem, column_means, n_samples):
    """The :class:`DualityGap` of a Gaussian problem with no, L2, L1 or elastic-net penalty
    (non-negative or not), else None."""
    penalty = problem.penalty
    positive = bool(getattr(penalty, "nonnegative", False))
    inner = penalty.inner if positive else penalty
    if not problem.family.quadratic:
        return None
    if getattr(problem, "n_coef", problem.n_features) != problem.n_features:
        return None
    means = column_means if problem.fit_intercept else None
    strengths = inner.elastic_net_strengths
    if strengths is None:
        return None
    if not inner.smooth:
        return DualityGap.for_problem(problem, column_means, n_samples)
    return DualityGap(0.0, strengths[0], positive, means, n_samples)


def gap_at_solution(problem, engine, params):
    """scikit-learn's ``dual_gap_`` of ``problem`` at ``params`` (the engine's coordinates),
    from one gradient round on ``engine``; None for a problem without one (not Gaussian, or
    several outputs) or an engine whose columns are rescaled."""
    if engine.column_scale is not None or engine.column_moments is None:
        return None
    objective = Objective(problem, engine)
    duality = _gap_of(problem, objective.column_moments()[0], engine.n_samples)
    if duality is None:
        return None
    params = np.asarray(params, dtype=float)
    coef = params[:problem.n_features]
    value, grad = objective.value_and_grad(params)
    loss_grad = grad.copy()
    loss_grad[:problem.n_features] -= problem.penalty.grad(coef)
    return float(duality.gap(params, value - problem.penalty.smooth_value(coef), loss_grad))
