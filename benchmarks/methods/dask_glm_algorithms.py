"""dask-glm's solvers (``dask_glm.algorithms``), run on the persisted Dask arrays.

dask-glm minimises ``sum loss + lamduh * regularizer(beta)`` with the L2 regularizer
``||beta||^2 / 2`` and no separate intercept (a column of ones would be penalised), so
``LogisticL2(C, fit_intercept=False)`` maps to ``regularizer="l2", lamduh=1 / C``.  Its
solvers standardise the columns of ``X`` by default, which changes the penalised
objective; they are called with ``normalize=False`` to solve the problem as stated.

``newton`` and ``gradient_descent`` take no regularizer: they minimise the unpenalised
log-loss, so they solve a neighbouring problem.  The harness reports the gap of that
problem's optimum on the stated objective (the floor below which their gap cannot go)
next to their results; with many rows and ``C = 1`` it is far below the target.

Each solver stops on its own criterion, in its own units, which the ladder of each
method states.  ADMM is the exception: its stopping test (Boyd et al.'s residuals, with
``abstol = reltol``) is so much stricter than the gap it guarantees that a run at
``abstol = 1e-4`` had not stopped after ten minutes here, while four iterations reach a
gap near ``1e-8``.  Its knob is therefore the number of iterations (with the test
switched off): calibration finds the fewest iterations that reach the target, a setting
dask-glm itself could not know, which favours it.  Rounds are counted by the harness as
graphs submitted to the scheduler.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace

import numpy as np

from benchmarks.methods.base import (
    ITERATION_LADDER,
    TOLERANCE_LADDER,
    Fit,
    Method,
    Unsupported,
    ladder,
)
from benchmarks.problems import LogisticL2

__all__ = ["DaskGlmSolver"]


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


class DaskGlmSolver(Method):
    """One ``dask_glm.algorithms`` solver on ``LogisticL2(C, fit_intercept=False)``.

    Parameters
    ----------
    solver : {"lbfgs", "newton", "gradient_descent", "proximal_grad", "admm"}
    tol_meaning : str
        What the solver's tolerance bounds (shown in the documentation of the results).
    tolerances : callable
        ``n_samples -> ladder``, loosest first.
    penalised : bool
        Whether the solver takes the regularizer (False: it minimises the unpenalised loss).
    max_iter : int
    time_cap_s : float, optional
        Calibration gives up tightening after a run longer than this.
    knob : {"tol", "iterations"}
        What the ladder sets: the solver's tolerance, or its number of iterations (its
        own stopping test switched off).
    """

    library = "dask-glm"
    where = "cluster"

    def __init__(self, solver, tol_meaning, tolerances, penalised=True, max_iter=10_000,
                 time_cap_s=None, knob="tol"):
        self.solver = solver
        self.knob = knob
        self.tol_meaning = tol_meaning
        self._tolerances = tolerances
        self.penalised = penalised
        self.max_iter = max_iter
        self.time_cap_s = time_cap_s
        self.name = f"dask-glm-{solver}"
        self.label = f"dask_glm.algorithms.{solver}"
        if not penalised:
            self.label += " (no penalty)"

    def supports(self, problem):
        return isinstance(problem, LogisticL2) and not problem.fit_intercept

    def solves(self, problem):
        """The problem the solver really minimises: the unpenalised one for ``newton`` and
        ``gradient_descent``."""
        return problem if self.penalised else replace(problem, C=float("inf"))

    def check(self, data, problem):
        if data.spec.sparse:
            raise Unsupported("dask-glm's solvers take dense (or pydata/sparse) chunks, "
                              "not scipy CSR chunks")

    def tolerances(self, data, problem):
        return tuple(self._tolerances(data.spec.n_samples))

    def _keywords(self, problem, tol):
        from dask_glm import families

        keywords = {"family": families.Logistic, "max_iter": self.max_iter,
                    "normalize": False}
        if self.penalised:
            keywords.update(regularizer="l2", lamduh=1.0 / problem.C)
        if self.knob == "iterations":
            keywords["max_iter"] = int(tol)
            tol = 0.0  # never met: exactly max_iter iterations
        if self.solver == "admm":
            keywords.update(abstol=tol, reltol=tol)
        else:
            keywords["tol"] = tol
        return keywords

    def run(self, data, problem, tol):
        from dask_glm import algorithms

        solve = algorithms._solvers[self.solver]
        with _recording_lbfgs_info({}) as info, warnings.catch_warnings():
            # dask-glm sets a Dask option under a name that newer Dask versions deprecate
            warnings.simplefilter("ignore")
            beta = solve(data.X, data.target(problem.target), **self._keywords(problem, tol))
        details = {"tol_meaning": self.tol_meaning}
        if self.solver == "lbfgs":
            details.update(scipy_warnflag=info.get("warnflag"),
                           scipy_task=str(info.get("task", "")))
        n_iter = info.get("nit") if self.solver == "lbfgs" else None
        if self.knob == "iterations":
            n_iter = int(tol)
        return Fit(coef=np.asarray(beta, dtype=np.float64).ravel().copy(), n_iter=n_iter,
                   details=details)


def methods():
    """The dask-glm methods of the registry."""
    return [
        DaskGlmSolver("lbfgs", "scipy's pgtol on the sum-scale gradient",
                      lambda n: tuple(t * n for t in TOLERANCE_LADDER)),
        DaskGlmSolver("newton", "largest change of a coefficient in one iteration",
                      lambda n: ladder(1e-2, 1e-10), penalised=False),
        DaskGlmSolver("gradient_descent", "relative decrease of the objective in one iteration",
                      lambda n: ladder(1e-4, 1e-14), penalised=False),
        DaskGlmSolver("proximal_grad", "relative decrease of the objective in one iteration",
                      lambda n: ladder(1e-4, 1e-14)),
        DaskGlmSolver("admm", "iterations (the residual tests switched off)",
                      lambda n: ITERATION_LADDER, knob="iterations"),
    ]
