"""Normal equations: one round for ``X^T W X`` and ``X^T W y``, then a d x d solve."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..compute.linalg import solve_nonnegative, solve_symmetric
from ..model.families import Gaussian
from ..model.penalties import L2, NonNegative, NoPenalty
from .base import History, Objective, Solver, SolverResult

__all__ = ["NormalEquations"]


class NormalEquations(Solver):
    """Least squares and ridge in one round.

    Every partition returns its centred weighted Gram statistics, merged exactly on the
    workers; the driver solves ``(Sxx / W + alpha I) coef = Sxy / W`` by Cholesky, falling
    back to the minimum-norm solution when ``Sxx`` is singular (as numpy's ``lstsq``).
    With non-negative coefficients (``positive=True``) the same quadratic is minimised
    over ``coef >= 0`` on the driver (:func:`~daskglm.compute.linalg.solve_nonnegative`,
    non-negative least squares from the Gram matrix), still in one round.
    Gaussian family, no penalty or L2 only.
    """

    name = "normal"
    families = (Gaussian,)
    handles_positive = True

    @classmethod
    def unsupported(cls, problem):
        penalty = problem.penalty
        if isinstance(penalty, NonNegative):
            penalty = penalty.inner
        reason = super().unsupported(replace(problem, penalty=penalty))
        if reason is None and not isinstance(penalty, (NoPenalty, L2)):
            reason = "solver 'normal' handles only no penalty or an l2 penalty"
        return reason

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        stats = objective.gram()
        weight = stats.weight
        penalty = problem.penalty
        nonnegative = isinstance(penalty, NonNegative)
        inner = penalty.inner if nonnegative else penalty
        alpha = inner.alpha if isinstance(inner, L2) else 0.0
        if problem.fit_intercept:
            xtx, xty, yty = stats.sxx, stats.sxy, stats.syy
        else:
            xtx, xty = stats.uncentred()
            yty = stats.syy + weight * stats.mean_y**2
        matrix = xtx / weight + alpha * np.eye(problem.n_features)
        solve = solve_nonnegative if nonnegative else solve_symmetric
        coef, rank_deficient = solve(matrix, xty / weight)
        grad = matrix @ coef - xty / weight
        if nonnegative:
            grad = np.where(coef > 0, grad, np.minimum(grad, 0.0))  # the projected gradient
        value = 0.5 * (yty - 2 * coef @ xty + coef @ xtx @ coef) / weight
        value += problem.penalty.value(coef)
        if problem.fit_intercept:
            params = np.append(coef, stats.mean_y - stats.mean_x @ coef)
        else:
            params = coef
        history.record(value, np.max(np.abs(grad), initial=0.0), 1.0, rank_deficient=rank_deficient)
        return SolverResult(params, 1, True, history.entries, "solved")
