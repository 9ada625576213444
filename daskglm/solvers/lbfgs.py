"""L-BFGS: scipy's L-BFGS-B driven by one-round evaluations of value and gradient."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from .base import History, Objective, Solver, SolverResult

__all__ = ["LBFGS"]


class LBFGS(Solver):
    """Limited-memory BFGS (scipy's L-BFGS-B, unbounded).

    Every function evaluation scipy asks for is one engine round returning the objective
    and its gradient together.  Stops when the largest gradient entry is at most ``tol``.

    Options
    -------
    memory : int, default 10
        Number of correction pairs kept.
    max_evaluations : int, default 15000
        Cap on function evaluations (rounds).
    """

    name = "lbfgs"
    options = {"memory": 10, "max_evaluations": 15000}

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        last = {}

        def value_and_grad(params):
            value, grad = objective.value_and_grad(params)
            last.update(params=params.copy(), value=value, grad=grad)
            return value, grad

        previous = [np.array(params0, dtype=float)]

        def callback(intermediate_result):
            params = intermediate_result.x
            history.record(
                intermediate_result.fun,
                objective.optimality(params, last["grad"]),
                np.linalg.norm(params - previous[0]),
            )
            previous[0] = params.copy()

        result = scipy.optimize.minimize(
            value_and_grad,
            np.array(params0, dtype=float),
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options={
                "maxiter": self.max_iter,
                "maxfun": int(self.opts["max_evaluations"]),
                "maxcor": int(self.opts["memory"]),
                "gtol": self.tol,
                "ftol": 64 * np.finfo(float).eps,
                "maxls": 50,
            },
        )
        # status 2 (line search failure) is scipy's answer at an optimum within round-off
        converged = result.status == 0 or (
            result.status == 2 and objective.optimality(result.x, result.jac) <= self.tol
        )
        return SolverResult(result.x, int(result.nit), converged, history.entries, str(result.message))
