"""Divide and conquer: every partition solves its own problem, the driver averages."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.local_solves import fit_partition
from ..model.problem import Feature
from ..optim.linalg import solve_symmetric
from .base import History, Objective, Solver, SolverResult
from .proximal import solve_composite_quadratic

__all__ = ["Averaging"]


class Averaging(Solver):
    """One-shot parameter averaging, optionally followed by one Newton step.

    In ONE round every partition minimises its own weighted mean loss plus the same
    penalty to convergence (L-BFGS-B on its rows, stopping at gradient ``tol``), and the
    driver averages the local solutions weighted by the partitions' total sample weight.
    The average is close to the optimum when every partition is large and alike, but it
    carries a bias that does not vanish with more iterations.

    ``correction="newton"`` adds TWO rounds: the objective, gradient and Hessian at the
    average, from which the driver takes the full Newton step (a proximal Newton step,
    solved on the driver, for L1 and elastic-net penalties), then the objective and
    gradient at the corrected point, which verify its optimality.

    ``converged`` is True only when global optimality (the largest violation of the
    optimality conditions at most ``tol``) was verified: by the verification round with
    the correction, or, on one partition, by the local solve, which is then the global
    one.  The plain average of several partitions is never checked, so it reports
    ``converged`` False ("one-shot average of N partitions: global optimality not
    checked") and the estimator warns.

    ``history_`` has one entry per iteration (the average, then the Newton step).  The
    first reports the ``spread`` of the local solutions: the weighted root-mean-square
    distance to their average (``max_spread``: the largest distance, ``relative_spread``:
    ``spread`` over the norm of the average); its ``objective`` and ``grad_norm`` at the
    average are known only with the correction (NaN otherwise).  The second, with the correction, reports the
    Newton step's length and the objective and optimality at the corrected point.

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
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.NON_QUADRATIC_PENALTY,
                         Feature.NONSMOOTH_PENALTY})

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
            problem.fit_intercept, self.tol, int(self.opts["local_max_iter"]), kind=Kind.LOCAL_SOLVE,
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
        if self.opts["correction"] != "newton":
            if len(fits) == 1:  # the local problem is the global one
                converged = fits[0].converged
                message = f"one partition: the local solve {'met' if converged else 'missed'} tol"
                return SolverResult(average, 1, converged, history.entries, message)
            message = f"one-shot average of {len(fits)} partitions: global optimality not checked"
            return SolverResult(average, 1, False, history.entries, message)

        objective = Objective(problem, engine)
        value, grad, hess = objective.value_grad_hess(average)
        history.entries[0].update(objective=value + objective.nonsmooth_value(average),
                                  grad_norm=objective.optimality(average, grad))
        params, _ = self._newton_step(problem, average, grad, hess)
        value, grad = objective.value_and_grad(params)
        optimality = objective.optimality(params, grad)
        history.record(value + objective.nonsmooth_value(params), optimality,
                       float(np.linalg.norm(params - average)))
        converged = optimality <= self.tol
        message = (f"averaged, Newton step: global optimality {optimality:.3g} "
                   f"{'<=' if converged else '>'} tol {self.tol:g}")
        return SolverResult(params, 2, converged, history.entries, message)

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
