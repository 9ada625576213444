"""dask-glm's solvers (``dask_glm.algorithms``), run on the persisted Dask arrays.

dask-glm minimises ``sum loss + lamduh * regularizer(beta)`` with the L2 regularizer
``||beta||^2 / 2`` and no separate intercept (a column of ones would be penalised), so
``LogisticL2(C, fit_intercept=False)`` maps to ``regularizer="l2", lamduh=1 / C``.  Its
solvers standardise the columns of ``X`` by default, which changes the penalised
objective; they are called with ``normalize=False`` to solve the problem as stated.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ..problems import LogisticL2
from .base import TOLERANCE_LADDER, Fit, Method

__all__ = ["DaskGlmLBFGS"]


@contextlib.contextmanager
def _recording_lbfgs_info(record):
    """Record the ``info`` dict that scipy's ``fmin_l_bfgs_b`` returns inside dask-glm.

    dask-glm's ``lbfgs`` returns only the coefficients; this wraps the scipy function it
    calls, for the duration of the block, to keep iteration and evaluation counts.
    """
    from dask_glm import algorithms

    original = algorithms.fmin_l_bfgs_b

    def wrapped(*args, **kwargs):
        beta, value, info = original(*args, **kwargs)
        record.update(info)
        return beta, value, info

    algorithms.fmin_l_bfgs_b = wrapped
    try:
        yield record
    finally:
        algorithms.fmin_l_bfgs_b = original


class DaskGlmLBFGS(Method):
    """``dask_glm.algorithms.lbfgs`` (scipy's ``fmin_l_bfgs_b`` over Dask evaluations).

    Its ``tol`` is scipy's ``pgtol`` on the SUM-scale gradient, so the ladder is
    :data:`~benchmarks.methods.base.TOLERANCE_LADDER` times the number of rows: the same
    gradient bounds as the mean-scale solvers.
    """

    name = "dask-glm-lbfgs"
    label = "dask_glm.algorithms.lbfgs"
    library = "dask-glm"
    where = "cluster"

    def __init__(self, max_iter=10_000):
        self.max_iter = max_iter

    def supports(self, problem):
        return isinstance(problem, LogisticL2) and not problem.fit_intercept

    def tolerances(self, data, problem):
        return tuple(t * data.spec.n_samples for t in TOLERANCE_LADDER)

    def run(self, data, problem, tol):
        from dask_glm import algorithms, families

        with _recording_lbfgs_info({}) as info, warnings.catch_warnings():
            # dask-glm sets a Dask option under a name that newer Dask versions deprecate
            warnings.simplefilter("ignore", FutureWarning)
            beta = algorithms.lbfgs(
                data.X,
                data.target(problem.target),
                regularizer="l2",
                lamduh=1.0 / problem.C,
                max_iter=self.max_iter,
                tol=tol,
                family=families.Logistic,
                normalize=False,
            )
        return Fit(
            coef=np.asarray(beta, dtype=np.float64).ravel().copy(),
            n_iter=info.get("nit"),
            rounds=info.get("funcalls"),
            details={"scipy_warnflag": info.get("warnflag"),
                     "scipy_task": str(info.get("task", ""))},
        )


def methods():
    """The dask-glm methods of the registry."""
    return [DaskGlmLBFGS()]
