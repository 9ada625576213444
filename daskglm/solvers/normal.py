"""Normal equations: one round for ``X^T W X`` and ``X^T W y``, then a d x d solve."""

from __future__ import annotations

import numpy as np

from ..compute.linalg import solve_symmetric
from ..model.penalties import L2
from .base import History, Objective, Solver, SolverResult

__all__ = ["NormalEquations"]


class NormalEquations(Solver):
    """Least squares and ridge in one round.

    Every partition returns its centred weighted Gram statistics, merged exactly on the
    workers; the driver solves ``(Sxx / W + alpha I) coef = Sxy / W`` by Cholesky, falling
    back to the minimum-norm solution when ``Sxx`` is singular (as numpy's ``lstsq``).
    Gaussian family, no penalty or L2 only.
    """

    name = "normal"
    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        stats = objective.gram()
        weight = stats.weight
        alpha = problem.penalty.alpha if isinstance(problem.penalty, L2) else 0.0
        if problem.fit_intercept:
            xtx, xty, yty = stats.sxx, stats.sxy, stats.syy
        else:
            xtx, xty = stats.uncentred()
            yty = stats.syy + weight * stats.mean_y**2
        matrix = xtx / weight + alpha * np.eye(problem.n_features)
        coef, rank_deficient = solve_symmetric(matrix, xty / weight)
        grad = matrix @ coef - xty / weight
        value = 0.5 * (yty - 2 * coef @ xty + coef @ xtx @ coef) / weight
        value += problem.penalty.value(coef)
        if problem.fit_intercept:
            params = np.append(coef, stats.mean_y - stats.mean_x @ coef)
        else:
            params = coef
        history.record(value, np.max(np.abs(grad), initial=0.0), 1.0, rank_deficient=rank_deficient)
        return SolverResult(params, 1, True, history.entries, "solved")
