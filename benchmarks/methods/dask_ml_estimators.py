"""dask-ml's linear models (``dask_ml.linear_model``), fitted on the persisted Dask arrays.

dask-ml's estimators call dask-glm's solvers.  ``LogisticRegression(penalty="l2", C)``
minimises ``sum log-loss + ||coef||^2 / (2 C)`` (``lamduh = 1 / C``) and, with
``fit_intercept=True``, appends a column of ones that the penalty then covers; the
benchmarks fit it without an intercept, with ``solver="lbfgs"`` (dask-ml's fastest for
this problem; its default is ``"admm"``) and ``normalize=False`` passed through
``solver_kwargs`` so that the penalised objective is the stated one.  ``LinearRegression``
is fitted with ``solver="newton"``, which takes no penalty (ordinary least squares) and
solves it in one Newton step plus the step that confirms convergence.
"""

from __future__ import annotations

import warnings

import numpy as np

from benchmarks.methods.base import TOLERANCE_LADDER, Fit, Method, Unsupported, ladder
from benchmarks.problems import LeastSquares, LogisticL2

__all__ = ["DaskMLLogisticRegression", "DaskMLLinearRegression"]


class _DaskML(Method):
    library = "dask-ml"
    where = "cluster"

    def check(self, data, problem):
        if data.spec.sparse:
            raise Unsupported("dask-ml's linear models call dask-glm, which takes dense "
                              "(or pydata/sparse) chunks, not scipy CSR chunks")

    def _fit(self, model, data, problem):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data.X, data.target(problem.target))
        intercept = float(model.intercept_) if problem.fit_intercept else 0.0
        return Fit(coef=np.asarray(model.coef_, dtype=np.float64).ravel().copy(),
                   intercept=intercept)


class DaskMLLogisticRegression(_DaskML):
    """``dask_ml.linear_model.LogisticRegression(solver="lbfgs")``; ``tol`` is dask-glm's
    L-BFGS ``pgtol`` on the sum-scale gradient (ladder scaled by the number of rows)."""

    name = "dask-ml-logistic"
    label = "dask_ml LogisticRegression(solver='lbfgs')"

    def supports(self, problem):
        return isinstance(problem, LogisticL2) and not problem.fit_intercept

    def tolerances(self, data, problem):
        return tuple(t * data.spec.n_samples for t in TOLERANCE_LADDER)

    def run(self, data, problem, tol):
        from dask_ml.linear_model import LogisticRegression

        model = LogisticRegression(penalty="l2", C=problem.C, fit_intercept=False,
                                   solver="lbfgs", tol=tol, max_iter=10_000,
                                   solver_kwargs={"normalize": False})
        return self._fit(model, data, problem)


class DaskMLLinearRegression(_DaskML):
    """``dask_ml.linear_model.LinearRegression(solver="newton")``; ``tol`` is the largest
    change of a coefficient in one Newton iteration."""

    name = "dask-ml-linear"
    label = "dask_ml LinearRegression(solver='newton')"

    def supports(self, problem):
        return isinstance(problem, LeastSquares) and not problem.alpha

    def tolerances(self, data, problem):
        return ladder(1e-2, 1e-10, per_decade=1)

    def run(self, data, problem, tol):
        from dask_ml.linear_model import LinearRegression

        model = LinearRegression(fit_intercept=problem.fit_intercept, solver="newton",
                                 tol=tol, max_iter=100)
        return self._fit(model, data, problem)


def methods():
    """The dask-ml methods of the registry."""
    return [DaskMLLogisticRegression(), DaskMLLinearRegression()]
