"""glum's ``GeneralizedLinearRegressor``, fitted on the in-memory copy of the data.

glum minimises ``sum_i w_i deviance_i / (2 sum_i w_i) + alpha ||coef||^2 / 2`` (with
``l1_ratio=0``): for the binomial and Poisson families half the deviance is the
log-likelihood loss up to a constant, so ``LogisticL2(C)`` (a summed loss with
``||coef||^2 / (2 C)``) is glum's objective times ``n`` for ``alpha = 1 / (C n)``, and
``PoissonL2(alpha)`` (scikit-learn's mean-deviance convention) is glum's with the same
``alpha``.  ``tol`` is glum's ``gradient_tol``.  Skipped with a message when glum is not
installed (``pip install glum``).
"""

from __future__ import annotations

import warnings

import numpy as np

from benchmarks.methods.base import TOLERANCE_LADDER, Fit, Method, Unsupported
from benchmarks.problems import LogisticL2, PoissonL2

__all__ = ["GlumRegressor"]


class GlumRegressor(Method):
    """``glum.GeneralizedLinearRegressor`` (its default IRLS solver) for the logistic and
    Poisson problems with an L2 penalty."""

    name = "glum"
    label = "glum GeneralizedLinearRegressor (IRLS)"
    library = "glum"
    where = "memory"

    def supports(self, problem):
        return isinstance(problem, (LogisticL2, PoissonL2))

    def tolerances(self, data, problem):
        return TOLERANCE_LADDER

    def check(self, data, problem):
        super().check(data, problem)
        try:
            import glum  # noqa: F401
        except ImportError:
            raise Unsupported("glum is not installed (pip install glum)") from None

    def run(self, data, problem, tol):
        from glum import GeneralizedLinearRegressor

        n = data.spec.n_samples
        if isinstance(problem, LogisticL2):
            family, alpha = "binomial", 1.0 / (problem.C * n)
        else:
            family, alpha = "poisson", problem.alpha
        model = GeneralizedLinearRegressor(family=family, alpha=alpha, l1_ratio=0.0,
                                           fit_intercept=problem.fit_intercept,
                                           gradient_tol=tol, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence is judged by the objective gap
            model.fit(data.X_local, data.target_local(problem.target))
        intercept = float(model.intercept_) if problem.fit_intercept else 0.0
        return Fit(coef=np.ravel(model.coef_).copy(), intercept=intercept,
                   n_iter=int(model.n_iter_))


def methods():
    """glum's method of the registry."""
    return [GlumRegressor()]
