"""daskglm's estimators, fitted on the persisted Dask arrays through the active client."""

from __future__ import annotations

import warnings

import numpy as np

from benchmarks.methods.base import EPOCH_LADDER, ITERATION_LADDER, TOLERANCE_LADDER, Fit, Method
from benchmarks.problems import LeastSquares, LogisticL2, PoissonL2

__all__ = ["DaskglmFit", "DaskglmSGD"]


def _estimator(problem, **options):
    """The daskglm estimator whose objective is ``problem``'s (up to a constant factor).

    ``LogisticL2(C)`` -> ``LogisticRegression(C=C)`` (scikit-learn's objective, divided by
    ``C n`` internally); ``LeastSquares(alpha)`` -> ``LinearRegression`` or
    ``Ridge(alpha)``; ``PoissonL2(alpha)`` -> ``PoissonRegressor(alpha)``.
    """
    import daskglm

    options["fit_intercept"] = problem.fit_intercept
    if isinstance(problem, LogisticL2):
        return daskglm.LogisticRegression(C=problem.C, **options)
    if isinstance(problem, LeastSquares):
        if problem.alpha:
            return daskglm.Ridge(alpha=problem.alpha, **options)
        return daskglm.LinearRegression(**options)
    if isinstance(problem, PoissonL2):
        return daskglm.PoissonRegressor(alpha=problem.alpha, **options)
    raise ValueError(f"daskglm has no estimator for {problem.name}.")


def _fit(model, data, problem):
    """Fit ``model`` on the persisted data; a :class:`Fit` with the ledger's numbers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is judged by the objective gap
        model.fit(data.X, data.target(problem.target))
    ledger = model.comm_
    kinds = {}
    for record in ledger.records:
        kinds[record.kind] = kinds.get(record.kind, 0) + 1
    intercept = float(np.ravel(model.intercept_)[0]) if problem.fit_intercept else 0.0
    return Fit(
        coef=np.ravel(model.coef_).copy(),
        intercept=intercept,
        n_iter=int(np.max(model.n_iter_)),
        rounds=int(ledger.rounds),
        bytes_ledger=ledger.bytes_measured,
        details={
            "converged": bool(model.converged_),
            "rounds_by_kind": kinds,
            "seconds_in_rounds": float(ledger.seconds),
            "seconds_waiting": float(ledger.seconds_waiting or 0.0),
            "bytes_modelled": int(ledger.bytes_modelled),
        },
        ledger=ledger,
    )


class DaskglmFit(Method):
    """A daskglm estimator with one deterministic solver.

    ``tol`` is daskglm's own (for most solvers the largest gradient entry of the mean
    objective; see the estimators' documentation for ``admm`` and ``averaging``).

    Parameters
    ----------
    solver : str
        daskglm's ``solver=``.
    problems : tuple of type
        Problem classes this solver handles.
    iterative : bool
        Whether the solver has a tolerance to tune.
    options : dict, optional
        ``solver_options``.
    name, label : str, optional
        Default ``"daskglm-<solver>"`` and a label naming the solver and options.
    max_iter : int
    tolerances : tuple of float, optional
        The ladder (default :data:`~benchmarks.methods.base.TOLERANCE_LADDER`).
    target_gap : float, optional
        The method's own gap target (default: the suite's).
    knob : {"tol", "iterations"}
        What the ladder sets: ``tol``, or ``max_iter`` (:data:`ITERATION_LADDER`, with the
        solver's default ``tol``), for a solver whose stopping test is too coarse to land
        near a gap target (ADMM's residual test: at neighbouring tolerances it stops one
        or several iterations apart).
    estimator_options : dict, optional
        Parameters of the estimator itself (e.g. ``cache``).
    """

    library = "daskglm"
    where = "cluster"

    def __init__(self, solver, problems, iterative=True, options=None, name=None, label=None,
                 max_iter=10_000, tolerances=TOLERANCE_LADDER, target_gap=None, knob="tol",
                 estimator_options=None):
        self.solver = solver
        self.knob = knob
        self.problems = tuple(problems)
        self.iterative = iterative
        self.options = dict(options or {})
        self.estimator_options = dict(estimator_options or {})
        self.max_iter = max_iter
        self.ladder = tuple(tolerances)
        self.target_gap = target_gap
        self.name = name or f"daskglm-{solver}"
        shown = "".join(f", {k}={v!r}" for k, v in
                        {**self.estimator_options, **self.options}.items())
        self.label = label or f"daskglm (solver={solver!r}{shown})"

    def supports(self, problem):
        return isinstance(problem, self.problems)

    def tolerances(self, data, problem):
        if not self.iterative:
            return ()
        return ITERATION_LADDER if self.knob == "iterations" else self.ladder

    def run(self, data, problem, tol):
        options = {"solver": self.solver, "max_iter": self.max_iter, **self.estimator_options}
        if self.options:
            options["solver_options"] = dict(self.options)
        if self.knob == "iterations":
            options["max_iter"] = int(tol)
        elif tol is not None:
            options["tol"] = tol
        return _fit(_estimator(problem, **options), data, problem)


class DaskglmSGD(Method):
    """daskglm's ``solver="sgd"`` run for a fixed number of epochs (``tol=None``).

    The knob is the number of epochs: a stochastic method's stopping rule measures noisy
    progress, so the number of passes is what the ladder sets.  The random draws are
    seeded (``random_state=0``), so every run of the same length gives the same model.

    Parameters
    ----------
    name : str
    label : str
    options : dict
        ``solver_options`` (batch size, learning rate, ``sync_every``, ``average``, ...).
    target_gap : float
        The gap target stochastic methods are held to (they do not reach the suite's).
    """

    library = "daskglm"
    where = "cluster"
    knob = "epochs"

    def __init__(self, name, label, options, target_gap=1e-3, epochs=EPOCH_LADDER):
        self.name = name
        self.label = label
        self.options = {"random_state": 0, **options}
        self.target_gap = target_gap
        self.epochs = tuple(epochs)

    def supports(self, problem):
        return isinstance(problem, LogisticL2)  # the step sizes below are for this loss

    def tolerances(self, data, problem):
        return self.epochs

    def run(self, data, problem, epochs):
        model = _estimator(problem, solver="sgd", tol=None, max_iter=int(epochs),
                           solver_options=dict(self.options))
        return _fit(model, data, problem)


def _sgd_variants():
    """The SGD configurations benchmarked: large synchronous batches, local SGD, and local
    SGD with Polyak-Ruppert averaging.  Features have unit variance, so a constant rate of
    1 is stable for the logistic loss (its curvature is at most 1/4 per unit feature)."""
    common = {"learning_rate": "constant", "eta0": 1.0}
    return [
        DaskglmSGD("daskglm-sgd-batch", "daskglm (solver='sgd', batch_size=50000, eta0=1)",
                   {**common, "batch_size": 50_000}),
        DaskglmSGD("daskglm-sgd-local",
                   "daskglm (solver='sgd', local SGD: batch_size=10000, sync_every=25, eta0=1)",
                   {**common, "batch_size": 10_000, "sync_every": 25}),
        DaskglmSGD("daskglm-sgd-local-avg",
                   "daskglm (solver='sgd', local SGD + averaging: batch_size=10000, "
                   "sync_every=25, average=True, eta0=1)",
                   {**common, "batch_size": 10_000, "sync_every": 25, "average": True}),
    ]


def methods():
    """The daskglm methods of the registry."""
    smooth = (LogisticL2, LeastSquares, PoissonL2)
    return [
        DaskglmFit("lbfgs", smooth),
        # the solver daskglm picks from the validation round's measurements
        DaskglmFit("auto", smooth),
        DaskglmFit("gd", smooth),
        DaskglmFit("newton", smooth),
        DaskglmFit("proximal", smooth),
        # as dask-glm's ADMM: its residual test stops it 1 or 4 iterations in at
        # neighbouring tolerances, far on either side of a gap target
        DaskglmFit("admm", smooth, knob="iterations"),
        DaskglmFit("averaging", smooth, options={"correction": "newton"},
                   name="daskglm-averaging-newton"),
        DaskglmFit("normal", (LeastSquares,), iterative=False),
        # every round reads every partition from where the data are (a zarr store)
        DaskglmFit("lbfgs", smooth, estimator_options={"cache": "none"},
                   name="daskglm-lbfgs-stream"),
        *_sgd_variants(),
    ]
