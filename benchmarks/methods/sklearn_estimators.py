"""scikit-learn's estimators, fitted on the in-memory numpy copy of the data."""

from __future__ import annotations

import warnings

import numpy as np

from ..problems import LeastSquares, LogisticL2
from .base import TOLERANCE_LADDER, Fit, Method

__all__ = ["SklearnLogisticRegression", "SklearnLinearRegression"]


class SklearnLogisticRegression(Method):
    """``sklearn.linear_model.LogisticRegression`` with one solver.

    ``LogisticL2(C)`` is scikit-learn's own objective.  For ``"lbfgs"`` ``tol`` is scipy's
    ``gtol`` on the gradient of the MEAN objective, as daskglm's.

    Parameters
    ----------
    solver : str
    max_iter : int
    threads : int, optional
        BLAS/OpenMP threads (default: as many as the cluster has).
    """

    library = "scikit-learn"
    where = "memory"

    def __init__(self, solver="lbfgs", max_iter=10_000, threads=None):
        self.solver = solver
        self.max_iter = max_iter
        self.threads = threads
        suffix = "" if threads is None else f"-{threads}thread"
        self.name = f"sklearn-{solver}{suffix}"
        self.label = f"sklearn LogisticRegression(solver={solver!r})"
        if threads is not None:
            self.label += f" ({threads} thread{'s' if threads > 1 else ''})"

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def tolerances(self, data, problem):
        return TOLERANCE_LADDER

    def run(self, data, problem, tol):
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=problem.C, solver=self.solver, tol=tol,
                                   fit_intercept=problem.fit_intercept, max_iter=self.max_iter)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence is judged by the objective gap
            model.fit(data.X_local, data.target_local(problem.target))
        return Fit(
            coef=np.ravel(model.coef_).copy(),
            intercept=float(model.intercept_[0]) if problem.fit_intercept else 0.0,
            n_iter=int(np.max(model.n_iter_)),
        )


class SklearnLinearRegression(Method):
    """``sklearn.linear_model.LinearRegression`` (LAPACK least squares) in memory."""

    name = "sklearn-ols"
    label = "sklearn LinearRegression"
    library = "scikit-learn"
    where = "memory"

    def supports(self, problem):
        return isinstance(problem, LeastSquares)

    def run(self, data, problem, tol):
        from sklearn.linear_model import LinearRegression

        model = LinearRegression(fit_intercept=problem.fit_intercept)
        model.fit(data.X_local, data.target_local(problem.target))
        intercept = float(model.intercept_) if problem.fit_intercept else 0.0
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=intercept)


def methods():
    """The scikit-learn methods of the registry."""
    return [SklearnLogisticRegression("lbfgs"), SklearnLogisticRegression("lbfgs", threads=1),
            SklearnLinearRegression()]
