"""Divide and conquer: every partition solves its own problem, the driver averages."""

from __future__ import annotations

import numpy as np

from ..local import fit_partition
from .base import History, Objective, Solver, SolverResult
from .normal import solve_symmetric
from .proximal import solve_composite_quadratic

__all__ = ["Averaging"]


class Averaging(Solver):
    """One-shot parameter averaging, optionally followed by one Newton step.

    In ONE round every partition minimises its own weighted mean loss plus the same
    penalty to convergence (L-BFGS-B on its rows, stopping at gradient ``tol``), and the
    driver averages the local solutions weighted by the partitions' total sample weight.
    The average is close to the optimum when every partition is large and alike, but it
    carries a bias that does not vanish with more iterations.

    ``correction="newton"`` adds ONE round: the objective, gradient and Hessian at the
    average, and the driver takes the full Newton step from it (a proximal Newton step,
    solved on the driver, for L1 and elastic-net penalties).

    ``history_`` has one entry per round.  The first reports the ``spread`` of the local
    solutions: the weighted root-mean-square distance to their average (``max_spread``:
    the largest distance, ``relative_spread``: ``spread`` over the norm of the average);
    its ``objective`` and ``grad_norm`` at the average are known only with the correction
    (NaN otherwise).  The second, with the correction, reports the Newton step's length;
    its objective would need one more round and is NaN.  ``converged`` says whether every
    local solve (and the driver's proximal Newton subproblem) met its tolerance.

    Every family; no, L2, L1 or elastic-net penalty.

    Options
    -------
    correction : {None, "newton"}, default None
        Newton step after averaging.
    local_max_iter : int, default 1000
        Most L-BFGS-B iterations of each local solve.
    """

    name = "averaging"
    options = {"correction": None, "local_max_iter": 1000}
    handles_nonsmooth = True

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        if self.opts["correction"] not in (None, "none", "newton"):
            raise ValueError(
                f"Option 'correction' of solver 'averaging' must be None or 'newton'; "
                f"got {self.opts['correction']!r}."
            )
        self._check_option("local_max_iter", 1, integer=True)

    def solve(self, problem, engine, params0):
        history = History(engine)
        fits = engine.map(
            fit_partition, np.asarray(params0, dtype=float), problem.family, problem.penalty,
            problem.fit_intercept, self.tol, int(self.opts["local_max_iter"]), kind="local_solve",
        )
        fits = [fit for fit in fits if fit.weight > 0]
        weights = np.array([fit.weight for fit in fits])
        solutions = np.array([fit.params for fit in fits])
        average = weights @ solutions / weights.sum()
        distances = np.linalg.norm(solutions - average, axis=1)
        spread = float(np.sqrt(weights @ distances**2 / weights.sum()))
        history.record(
            np.nan, np.nan, 0.0, spread=spread, max_spread=float(distances.max()),
            relative_spread=spread / max(float(np.linalg.norm(average)), np.finfo(float).tiny),
            local_iterations=max(fit.n_iter for fit in fits),
        )
        converged = all(fit.converged for fit in fits)
        if self.opts["correction"] != "newton":
            return SolverResult(average, 1, converged, history.entries, "averaged")

        objective = Objective(problem, engine)
        value, grad, hess = objective.value_grad_hess(average)
        history.entries[0].update(objective=value + objective.nonsmooth_value(average),
                                  grad_norm=objective.optimality(average, grad))
        params, solved = self._newton_step(problem, average, grad, hess)
        history.record(np.nan, np.nan, float(np.linalg.norm(params - average)))
        return SolverResult(params, 2, converged and solved, history.entries, "averaged, Newton step")

    def _newton_step(self, problem, center, grad, hess):
        """The (proximal) Newton step from ``center``: ``(params, solved)``."""
        penalty, n_features = problem.penalty, problem.n_features
        if penalty.smooth:
            step, _ = solve_symmetric(hess, -grad)
            return center + step, True
        # model of the loss alone; the whole penalty enters through its proximal operator
        coef = center[:n_features]
        loss_grad = grad.copy()
        loss_grad[:n_features] -= penalty.grad(coef)
        loss_hess = hess.copy()
        idx = np.arange(n_features)
        loss_hess[idx, idx] -= penalty.hess_diag(coef)
        return solve_composite_quadratic(loss_hess, loss_grad, center, problem,
                                         tol=min(self.tol, 1e-10) * 1e-2)
