"""scikit-learn's estimators, fitted on the in-memory copy of the data (dense or CSR)."""

from __future__ import annotations

import warnings

import numpy as np

from benchmarks.methods.base import EPOCH_LADDER, TOLERANCE_LADDER, Fit, Method
from benchmarks.problems import LeastSquares, LogisticL2, PoissonL2

__all__ = ["SklearnLogisticRegression", "SklearnLinearRegression", "SklearnPoissonRegressor",
           "SklearnSGDClassifier"]


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is judged by the objective gap
        model.fit(X, y)
    return model


def _intercept(model, problem):
    return float(np.ravel(model.intercept_)[0]) if problem.fit_intercept else 0.0


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
        _quiet_fit(model, data.X_local, data.target_local(problem.target))
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=_intercept(model, problem),
                   n_iter=int(np.max(model.n_iter_)))


class SklearnLinearRegression(Method):
    """``sklearn.linear_model.LinearRegression`` (LAPACK least squares; for sparse ``X``,
    LSQR), or ``Ridge(alpha)`` for a ridge problem (its ``"auto"`` solver: Cholesky on dense
    ``X``).

    Parameters
    ----------
    threads : int, optional
        BLAS threads (default: as many as the cluster has).
    """

    library = "scikit-learn"
    where = "memory"

    def __init__(self, threads=None):
        self.threads = threads
        self.name = "sklearn-linear" + ("" if threads is None else f"-{threads}thread")
        self.label = "sklearn LinearRegression / Ridge"
        if threads is not None:
            self.label += f" ({threads} thread{'s' if threads > 1 else ''})"

    def supports(self, problem):
        return isinstance(problem, LeastSquares)

    def run(self, data, problem, tol):
        from sklearn.linear_model import LinearRegression, Ridge

        if problem.alpha:
            model = Ridge(alpha=problem.alpha, fit_intercept=problem.fit_intercept)
        else:
            model = LinearRegression(fit_intercept=problem.fit_intercept)
        _quiet_fit(model, data.X_local, data.target_local(problem.target))
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=_intercept(model, problem))


class SklearnPoissonRegressor(Method):
    """``sklearn.linear_model.PoissonRegressor(alpha, solver="lbfgs")``; ``tol`` bounds the
    largest gradient entry of its mean objective (``PoissonL2``'s divided by ``n``)."""

    name = "sklearn-poisson"
    label = "sklearn PoissonRegressor(solver='lbfgs')"
    library = "scikit-learn"
    where = "memory"

    def supports(self, problem):
        return isinstance(problem, PoissonL2)

    def tolerances(self, data, problem):
        return TOLERANCE_LADDER

    def run(self, data, problem, tol):
        from sklearn.linear_model import PoissonRegressor

        model = PoissonRegressor(alpha=problem.alpha, fit_intercept=problem.fit_intercept,
                                 solver="lbfgs", tol=tol, max_iter=10_000)
        _quiet_fit(model, data.X_local, data.target_local(problem.target))
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=_intercept(model, problem),
                   n_iter=int(model.n_iter_))


class SklearnSGDClassifier(Method):
    """``sklearn.linear_model.SGDClassifier(loss="log_loss")`` for a fixed number of epochs.

    scikit-learn's SGD minimises ``mean log-loss + alpha ||coef||^2 / 2``, which is
    ``LogisticL2(C)``'s objective divided by ``C n`` for ``alpha = 1 / (C n)``.  One row
    per step, ``tol=None`` so that it runs every epoch of the ladder, ``random_state=0``,
    and ``learning_rate="invscaling", eta0=0.1, average=True``: its default ``"optimal"``
    rate, ``1 / (alpha t)``, is built for a strong penalty, and with ``alpha = 1 / n`` its
    steps are so large that the objective is many times the optimum after an epoch.
    """

    name = "sklearn-sgd"
    label = "sklearn SGDClassifier(loss='log_loss', invscaling, eta0=0.1, average=True)"
    library = "scikit-learn"
    where = "memory"
    knob = "epochs"
    target_gap = 1e-3

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def tolerances(self, data, problem):
        return EPOCH_LADDER

    def run(self, data, problem, epochs):
        from sklearn.linear_model import SGDClassifier

        n = data.spec.n_samples
        model = SGDClassifier(loss="log_loss", penalty="l2", alpha=1.0 / (problem.C * n),
                              fit_intercept=problem.fit_intercept, max_iter=int(epochs),
                              tol=None, random_state=0, learning_rate="invscaling",
                              eta0=0.1, average=True)
        _quiet_fit(model, data.X_local, data.target_local(problem.target))
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=_intercept(model, problem),
                   n_iter=int(model.n_iter_))


def methods():
    """The scikit-learn methods of the registry."""
    return [SklearnLogisticRegression("lbfgs"), SklearnLogisticRegression("lbfgs", threads=1),
            SklearnLinearRegression(), SklearnLinearRegression(threads=1),
            SklearnPoissonRegressor(), SklearnSGDClassifier()]
