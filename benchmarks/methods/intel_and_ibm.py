"""scikit-learn-intelex's and Snap ML's logistic regressions, fitted on the in-memory copy.

* ``sklearnex.linear_model.LogisticRegression`` is scikit-learn's estimator with oneDAL's
  solvers: ``LogisticL2(C)`` is its own objective and ``tol`` its ``tol``.
* ``snapml.LogisticRegression`` minimises ``sum_i log-loss_i + regularizer ||coef||^2 / 2``:
  ``LogisticL2(C)`` with ``regularizer = 1 / C`` (checked against scikit-learn to 6e-9 on
  5,000 x 10 at ``C`` 1 and 0.5).  ``tol`` is its own stopping tolerance; ``n_jobs`` the
  cores the cluster has.

Each is skipped with a message when its library is not installed.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from benchmarks.methods.base import TOLERANCE_LADDER, Fit, Method, Unsupported, ladder
from benchmarks.problems import LogisticL2

__all__ = ["IntelLogisticRegression", "SnapLogisticRegression"]


def _require(module, package):
    try:
        __import__(module)
    except ImportError:
        raise Unsupported(f"{package} is not installed (pip install {package})") from None


class IntelLogisticRegression(Method):
    """scikit-learn-intelex's ``LogisticRegression(solver="lbfgs")``."""

    name = "sklearnex-lbfgs"
    label = "scikit-learn-intelex LogisticRegression(solver='lbfgs')"
    library = "scikit-learn-intelex"
    where = "memory"

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def tolerances(self, data, problem):
        return TOLERANCE_LADDER

    def check(self, data, problem):
        super().check(data, problem)
        _require("sklearnex", "scikit-learn-intelex")

    def run(self, data, problem, tol):
        from sklearnex.linear_model import LogisticRegression

        model = LogisticRegression(C=problem.C, solver="lbfgs", tol=tol, max_iter=10_000,
                                   fit_intercept=problem.fit_intercept)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence is judged by the objective gap
            model.fit(data.X_local, data.target_local(problem.target))
        intercept = float(np.ravel(model.intercept_)[0]) if problem.fit_intercept else 0.0
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=intercept,
                   n_iter=int(np.max(model.n_iter_)))


class SnapLogisticRegression(Method):
    """Snap ML's ``LogisticRegression`` (its default solver)."""

    name = "snapml"
    label = "Snap ML LogisticRegression"
    library = "snapml"
    where = "memory"

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def tolerances(self, data, problem):
        return ladder(1e-2, 1e-10, per_decade=2)

    def check(self, data, problem):
        super().check(data, problem)
        _require("snapml", "snapml")

    def run(self, data, problem, tol):
        import snapml

        model = snapml.LogisticRegression(regularizer=1.0 / problem.C, tol=tol,
                                          max_iter=100_000,
                                          n_jobs=self.threads or len(os.sched_getaffinity(0)),
                                          fit_intercept=problem.fit_intercept)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data.X_local, data.target_local(problem.target))
        intercept = float(np.ravel(model.intercept_)[0]) if problem.fit_intercept else 0.0
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=intercept,
                   n_iter=int(np.max(model.n_iter_)))


def methods():
    """The methods of this module's registry."""
    return [IntelLogisticRegression(), SnapLogisticRegression()]
