"""Full-batch gradient descent with Barzilai-Borwein steps and a backtracking line search."""

from __future__ import annotations

import numpy as np

from .base import History, Objective, Solver, SolverResult
from .linesearch import backtracking

__all__ = ["GradientDescent"]


class GradientDescent(Solver):
    """Full-batch gradient descent.

    Each iteration tries the Barzilai-Borwein step ``s.s / s.g`` (the previous accepted
    step when that is not positive) and halves it until the Armijo condition holds; every
    trial point is one engine round returning value and gradient together.  Stops when
    the largest gradient entry is at most ``tol``.

    Options
    -------
    step_size : float, default 1.0
        First trial step.
    """

    name = "gd"
    options = {"step_size": 1.0}

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        params = np.array(params0, dtype=float)
        value, grad = objective.value_and_grad(params)
        step = float(self.opts["step_size"])
        converged = objective.optimality(params, grad) <= self.tol
        n_iter = 0
        while not converged and n_iter < self.max_iter:
            n_iter += 1
            search = backtracking(objective.value_and_grad, params, value, grad, -grad, step)
            if not search.success:
                break
            s = search.params - params
            g_change = search.grad - grad
            curvature = float(s @ g_change)
            params, value, grad = search.params, search.value, search.grad
            step = float(s @ s) / curvature if curvature > 0 else 2.0 * search.step
            optimality = objective.optimality(params, grad)
            history.record(value, optimality, search.step)
            converged = optimality <= self.tol
        return SolverResult(params, n_iter, converged, history.entries)
