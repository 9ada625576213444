"""Normal equations: one round for ``X^T W X`` and ``X^T W y``, then a d x d solve."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..families import Gaussian
from ..penalties import L2, NoPenalty
from .base import History, Objective, Solver, SolverResult

__all__ = ["NormalEquations", "solve_symmetric"]


def solve_symmetric(matrix, rhs):
    """Solve ``matrix @ x = rhs`` for symmetric positive semi-definite ``matrix``.

    Cholesky when the matrix is well conditioned; otherwise the minimum-norm solution
    from an eigendecomposition with eigenvalues below ``d * eps * max`` treated as zero.
    Returns ``(x, rank_deficient)``.
    """
    d = matrix.shape[0]
    if d == 0:
        return np.zeros(0), False
    eps = np.finfo(float).eps
    try:
        factor = scipy.linalg.cho_factor(matrix, lower=True, check_finite=False)
        diag = np.abs(np.diag(factor[0]))
        if diag.min() ** 2 > d * eps * diag.max() ** 2 * 1e3:
            return scipy.linalg.cho_solve(factor, rhs, check_finite=False), False
    except np.linalg.LinAlgError:
        pass
    values, vectors = scipy.linalg.eigh(matrix, check_finite=False)
    keep = values > d * eps * max(values.max(), 0.0)
    projected = vectors[:, keep].T @ rhs
    return vectors[:, keep] @ (projected / values[keep]), True


class NormalEquations(Solver):
    """Least squares and ridge in one round.

    Every partition returns its centred weighted Gram statistics, merged exactly on the
    workers; the driver solves ``(Sxx / W + alpha I) coef = Sxy / W`` by Cholesky, falling
    back to the minimum-norm solution when ``Sxx`` is singular (as numpy's ``lstsq``).
    Gaussian family, no penalty or L2 only.
    """

    name = "normal"
    families = (Gaussian,)

    @classmethod
    def unsupported(cls, problem):
        reason = super().unsupported(problem)
        if reason is None and not isinstance(problem.penalty, (NoPenalty, L2)):
            reason = "solver 'normal' handles only no penalty or an l2 penalty"
        return reason

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
