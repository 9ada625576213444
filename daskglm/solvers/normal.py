"""Normal equations: one round for ``X^T W X`` and ``X^T W y``, then a d x d solve.

:meth:`NormalEquations.solve_targets` solves several targets from the same single round.
"""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.kernels import gram
from ..model.problem import Feature
from ..optim.linalg import solve_nonnegative, solve_symmetric
from .base import FirstEvaluation, History, Objective, Solver, SolverResult

__all__ = ["NormalEquations"]


class NormalEquations(Solver):
    """Least squares and ridge in one round.

    Every partition returns its centred weighted Gram statistics, merged exactly on the
    workers; the driver solves ``(Sxx / W + H) coef = Sxy / W - g`` by Cholesky, with
    ``H`` and ``g`` the quadratic penalty's constant diagonal Hessian and its gradient at
    zero (``alpha I`` and 0 for ridge), falling
    back to the minimum-norm solution when ``Sxx`` is singular (as numpy's ``lstsq``).
    With non-negative coefficients (``positive=True``) the same quadratic is minimised
    over ``coef >= 0`` on the driver (:func:`~daskglm.optim.linalg.solve_nonnegative`,
    non-negative least squares from the Gram matrix), still in one round.
    Gaussian family, no penalty or a quadratic one (``Penalty.quadratic``: L2, or one of
    the user's own, whose Hessian is constant and diagonal).  The Gram round is the fit's validation
    round (``validate_gram``): a fit reads the data once.
    """

    name = "normal"
    handles = frozenset({Feature.NONNEGATIVE})

    def first_evaluation(self, problem, params0):
        """The Gram statistics, which need no start point."""
        return FirstEvaluation(gram, (), Kind.VALIDATE_GRAM)

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        stats = objective.gram()
        if problem.fit_intercept:
            xtx, xty, yty = stats.sxx, stats.sxy, stats.syy
        else:
            xtx, xty = stats.uncentred()
            yty = stats.syy + stats.weight * stats.mean_y**2
        params, value, optimality, rank_deficient = _solve_gram(
            problem, xtx, xty, yty, stats.weight, stats.mean_x, stats.mean_y)
        history.record(value, optimality, 1.0, rank_deficient=rank_deficient)
        return SolverResult(params, 1, True, history.entries, "solved")

    def solve_targets(self, problem, engine, n_targets):
        """Solve for ``n_targets`` targets from ONE Gram round.

        The engine's ``X`` holds the ``problem.n_features`` columns of the features followed
        by one column per target (its ``y`` is not used), so the Gram statistics of that
        round hold ``X^T W X``, ``X^T W Y`` and the targets' sums of squares together.

        Returns
        -------
        SolverResult
            ``params`` of shape ``(n_targets, n_params)``; one history entry per target.
        """
        history = History(engine)
        stats = Objective(problem, engine).gram()
        d = problem.n_features
        if problem.fit_intercept:
            moments = stats.sxx
        else:
            moments, _ = stats.uncentred()
        params = []
        for j in range(d, d + n_targets):
            found, value, optimality, rank_deficient = _solve_gram(
                problem, moments[:d, :d], moments[:d, j], moments[j, j], stats.weight,
                stats.mean_x[:d], stats.mean_x[j])
            params.append(found)
            history.record(value, optimality, 1.0, rank_deficient=rank_deficient,
                           target=j - d)
        return SolverResult(np.array(params).reshape(n_targets, problem.n_params), 1, True,
                            history.entries, "solved")


def _solve_gram(problem, xtx, xty, yty, weight, mean_x, mean_y):
    """Parameters, objective, optimality and rank deficiency from one target's Gram
    statistics (centred with an intercept, about the origin without)."""
    penalty = problem.penalty
    nonnegative = Feature.NONNEGATIVE in problem.features()
    inner = penalty.inner if nonnegative else penalty
    # a quadratic penalty (the solver handles no other): its constant diagonal Hessian
    # and its gradient at zero make it part of the normal equations
    zero = np.zeros(problem.n_features)
    matrix = xtx / weight + np.diag(np.asarray(inner.hess_diag(zero), dtype=float) + zero)
    rhs = xty / weight - np.asarray(inner.grad(zero), dtype=float)
    solve = solve_nonnegative if nonnegative else solve_symmetric
    coef, rank_deficient = solve(matrix, rhs)
    grad = matrix @ coef - rhs
    if nonnegative:
        grad = np.where(coef > 0, grad, np.minimum(grad, 0.0))  # the projected gradient
    value = 0.5 * (yty - 2 * coef @ xty + coef @ xtx @ coef) / weight + penalty.value(coef)
    params = np.append(coef, mean_y - mean_x @ coef) if problem.fit_intercept else coef
    return params, value, float(np.max(np.abs(grad), initial=0.0)), rank_deficient
