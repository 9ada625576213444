"""daskglm's estimators, fitted on the persisted Dask arrays through the active client."""

from __future__ import annotations

import warnings

import numpy as np

from ..problems import LeastSquares, LogisticL2
from .base import TOLERANCE_LADDER, Fit, Method

__all__ = ["DaskglmFit"]


class DaskglmFit(Method):
    """A daskglm estimator with one solver.

    ``LogisticL2(C)`` maps to ``daskglm.LogisticRegression(C=C)`` (the same objective as
    scikit-learn's, divided by ``C * n`` internally), ``LeastSquares`` to
    ``daskglm.LinearRegression``.  ``tol`` bounds the largest gradient entry of the mean
    objective.

    Parameters
    ----------
    solver : str
        daskglm's ``solver=``.
    problems : tuple of type
        Problem classes this solver handles.
    iterative : bool
        Whether the solver has a tolerance to tune.
    """

    library = "daskglm"
    where = "cluster"

    def __init__(self, solver, problems, iterative=True, max_iter=10_000):
        self.solver = solver
        self.problems = tuple(problems)
        self.iterative = iterative
        self.max_iter = max_iter
        self.name = f"daskglm-{solver}"
        self.label = f"daskglm (solver={solver!r})"

    def supports(self, problem):
        return isinstance(problem, self.problems)

    def tolerances(self, data, problem):
        return TOLERANCE_LADDER if self.iterative else ()

    def _estimator(self, problem, tol):
        import daskglm

        options = {"solver": self.solver, "fit_intercept": problem.fit_intercept,
                   "max_iter": self.max_iter}
        if tol is not None:
            options["tol"] = tol
        if isinstance(problem, LogisticL2):
            return daskglm.LogisticRegression(C=problem.C, **options)
        if isinstance(problem, LeastSquares):
            return daskglm.LinearRegression(**options)
        raise ValueError(f"{self.name} does not handle {problem.name}.")

    def run(self, data, problem, tol):
        model = self._estimator(problem, tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence is judged by the objective gap
            model.fit(data.X, data.target(problem.target))
        ledger = model.comm_
        kinds = {}
        for record in ledger.records:
            kinds[record.kind] = kinds.get(record.kind, 0) + 1
        return Fit(
            coef=np.ravel(model.coef_).copy(),
            intercept=float(np.ravel(model.intercept_)[0]) if problem.fit_intercept else 0.0,
            n_iter=int(model.n_iter_),
            rounds=int(ledger.rounds),
            details={
                "converged": bool(model.converged_),
                "rounds_by_kind": kinds,
                "seconds_in_rounds": float(ledger.seconds),
                "bytes_modelled": int(ledger.bytes_modelled),
            },
        )


def methods():
    """The daskglm methods of the registry."""
    return [
        DaskglmFit("lbfgs", (LogisticL2, LeastSquares)),
        DaskglmFit("gd", (LogisticL2, LeastSquares)),
        DaskglmFit("normal", (LeastSquares,), iterative=False),
    ]
