"""xgboost's linear booster (``booster="gblinear"``) on the in-memory copy of the data.

With ``objective="binary:logistic"`` its coordinate descent minimises ``sum_i log-loss_i /
n + reg_lambda ||coef||^2 / 2`` (xgboost scales ``reg_lambda`` by the total instance
weight): ``LogisticL2(C)`` with ``reg_lambda = 1 / (C n)``, checked against scikit-learn
to 4e-6 on 5,000 x 10.  The booster always fits a bias, so it solves the problem with an
unpenalised intercept (:meth:`XGBoostLinear.solves`); the harness reports that
problem's optimum's gap on the stated one as this method's floor.  The knob is the number
of boosting rounds (each one pass of coordinate descent over the columns), at
``learning_rate=1``.  Skipped with a message when xgboost is not installed.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import numpy as np

from benchmarks.methods.base import Fit, Method, Unsupported
from benchmarks.problems import LogisticL2

__all__ = ["XGBoostLinear"]

#: Boosting rounds tried, fewest first.
ROUNDS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class XGBoostLinear(Method):
    """``xgboost.XGBClassifier(booster="gblinear", updater="coord_descent")``."""

    name = "xgboost-gblinear"
    label = "xgboost XGBClassifier(booster='gblinear')"
    library = "xgboost"
    where = "memory"
    knob = "iterations"

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def solves(self, problem):
        return dataclasses.replace(problem, fit_intercept=True)

    def tolerances(self, data, problem):
        return ROUNDS

    def check(self, data, problem):
        super().check(data, problem)
        try:
            import xgboost  # noqa: F401
        except ImportError:
            raise Unsupported("xgboost is not installed (pip install xgboost)") from None

    def run(self, data, problem, rounds):
        import xgboost

        n = data.spec.n_samples
        model = xgboost.XGBClassifier(
            booster="gblinear", updater="coord_descent", objective="binary:logistic",
            reg_lambda=1.0 / (problem.C * n), reg_alpha=0.0, n_estimators=int(rounds),
            learning_rate=1.0, base_score=0.5,
            nthread=self.threads or len(os.sched_getaffinity(0)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data.X_local, data.target_local(problem.target))
        return Fit(coef=np.ravel(model.coef_).astype(np.float64),
                   intercept=float(np.ravel(model.intercept_)[0]), n_iter=int(rounds))


def methods():
    """xgboost's method of the registry."""
    return [XGBoostLinear()]
