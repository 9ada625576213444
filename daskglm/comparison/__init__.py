"""Fit several methods on the same data and compare what each one cost.

:func:`compare` fits one :class:`~daskglm.GLM` per method on the same training rows and
returns a :class:`~.results.Comparison`: one row per method with its iterations, rounds
of communication, passes over the training rows (:func:`~.passes.passes_over_data`),
bytes (measured from Dask's counters and modelled), seconds, seconds workers spent waiting
for the slowest partition, the gap of its objective to the best one reached, and its score on
held-out rows.  Every objective is evaluated the same way after the fits (one extra round
on the training data, not counted in the methods' ledgers), so that the gaps compare like
with like.  The untimed warm-up before the fits is :mod:`.warm_up`.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..engine import is_dask, make_engine
from ..estimators import GLM
from ..model.families import get_family
from ..solvers import SOLVERS, Objective, Problem
from .passes import passes_over_data
from .results import Comparison, MethodResult, format_table
from .warm_up import warm_up_fits, warm_up_round

__all__ = ["compare", "Comparison", "MethodResult", "format_table", "passes_over_data",
           "EVERY_METHOD"]

#: Every ``solver=`` value of the estimators, ``"auto"`` first.
EVERY_METHOD = ("auto", *SOLVERS)


def _n_rows(X):
    n = X.shape[0]
    if isinstance(n, float) and math.isnan(n):
        raise ValueError("X has unknown chunk sizes: call X.compute_chunk_sizes() first.")
    return int(n)


def _split(X, y, test_size):
    """The first rows for training, the last ``test_size`` (fraction or count) held out."""
    n = _n_rows(X)
    if test_size is None or test_size == 0:
        return X, y, None, None
    n_test = int(round(test_size * n)) if test_size < 1 else int(test_size)
    if not 0 < n_test < n:
        raise ValueError(f"test_size={test_size!r} leaves no rows to train or to test on.")
    split = n - n_test
    return X[:split], y[:split], X[split:], y[split:]


def _held_out_score(model, family, X_test, y_test):
    """Accuracy for the binomial family, ``model.score`` (R^2 or D^2) otherwise."""
    if family.name != "binomial":
        return float(model.score(X_test, y_test))
    predicted = model.predict(X_test) >= 0.5
    return float(((predicted == (y_test > 0.5)).mean()).compute()
                 if hasattr(predicted, "compute") else (predicted == (y_test > 0.5)).mean())


def _params(model, fit_intercept):
    coef = np.ravel(model.coef_)
    return np.r_[coef, float(np.ravel(model.intercept_)[0])] if fit_intercept else coef


#: Options a method gets in a comparison unless ``solver_options`` says otherwise: SGD's
#: ``max_iter`` counts epochs, so it gets a few epochs of local SGD with large batches
#: rather than ``max_iter`` epochs of 16-row steps; so do parameter-server SGD (pushes
#: every 4 steps) and gossip (8 local steps between exchanges).
METHOD_DEFAULTS = {
    "sgd": {"max_iter": 10, "options": {"batch_size": 1024, "sync_every": 8, "average": True,
                                        "random_state": 0}},
    "async": {"max_iter": 10, "options": {"batch_size": 256, "push_every": 4,
                                          "fetch_every": 4, "random_state": 0}},
    "gossip": {"max_iter": 10, "options": {"batch_size": 1024, "local_steps": 8,
                                           "random_state": 0}},
}


#: Methods :func:`compare` leaves out unless named: their tasks run for as long as an
#: epoch, so they are compared on request (``methods=[..., "async", "gossip"]``).
ON_REQUEST = ("async", "gossip")


#: Methods that are a solver with options of its own: ``{method: (solver, options)}``.
METHOD_VARIANTS = {
    "lbfgs-sharded": ("lbfgs", {"sharded": True}),
}


def compare(X, y, methods=None, *, family="binomial", penalty="l2", alpha=1e-4, l1_ratio=0.5,
            fit_intercept=True, test_size=0.2, tol=1e-8, max_iter=500, solver_options=None,
            at_defaults=False, warm_up="round"):
    """Fit each method on the same rows and tabulate what each one cost.

    Runs on the active ``distributed.Client`` if there is one, in this process otherwise.

    Parameters
    ----------
    X : ndarray or dask.array.Array of shape (n_samples, n_features)
    y : ndarray or dask.array.Array of shape (n_samples,)
    methods : list of str, optional
        Solver names, ``"auto"`` (its row names the solver it chose), or the variants of
        :data:`METHOD_VARIANTS` (``"lbfgs-sharded"``: L-BFGS on column shards); default:
        every solver but those of :data:`ON_REQUEST` (:data:`EVERY_METHOD`: all of them).
        A method that cannot handle the problem gets a row saying why.
    family : str or Family, default="binomial"
    penalty : {"l2", "l1", "elasticnet", "none"}, default="l2"
    alpha : float, default=1e-4
        Penalty strength on the mean-loss scale (as :class:`~daskglm.GLM`).
    l1_ratio : float, default=0.5
    fit_intercept : bool, default=True
    test_size : float or int, default=0.2
        Fraction (< 1) or number of the last rows held out for the score; 0 for none.
    tol : float, default=1e-8
    max_iter : int, default=500
    solver_options : dict, optional
        ``{method: options}`` passed to that method's ``solver_options``, on top of
        :data:`METHOD_DEFAULTS`.
    at_defaults : bool, default=False
        Fit every method as a new user would, at the estimator's own ``tol``,
        ``max_iter`` and solver options (``tol``, ``max_iter`` and
        :data:`METHOD_DEFAULTS` are then not used; ``solver_options`` still is).
    warm_up : {"round", "fits"} or None, default="round"
        Untimed work before the timed fits.  ``"round"``: one validation round on a few
        rows.  ``"fits"``: a fit of every method (2 iterations at most) on the first rows
        of every partition, so that every worker compiles or loads every method's
        compiled loops before any fit is timed (its wall time is the comparison's
        ``warm_up_seconds``).

    Returns
    -------
    Comparison
    """
    methods = [m for m in SOLVERS if m not in ON_REQUEST] if methods is None else list(methods)
    unknown = [m for m in methods
               if m != "auto" and m not in SOLVERS and m not in METHOD_VARIANTS]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; choose from "
                         f"{['auto'] + sorted(SOLVERS) + sorted(METHOD_VARIANTS)}.")
    if warm_up not in ("round", "fits", None):
        raise ValueError(f"warm_up must be 'round', 'fits' or None; got {warm_up!r}.")
    X_train, y_train, X_test, y_test = _split(X, y, test_size)
    family_obj = get_family(family)
    n_train, n_features = _n_rows(X_train), int(X.shape[1])
    options = solver_options or {}
    models = []
    for method in methods:
        solver, variant = METHOD_VARIANTS.get(method, (method, {}))
        defaults = {} if at_defaults else METHOD_DEFAULTS.get(method, {})
        method_options = {**variant, **defaults.get("options", {}),
                          **(options.get(method) or {})}
        stopping = {} if at_defaults else {
            "tol": tol, "max_iter": min(max_iter, defaults.get("max_iter", max_iter))}
        models.append(GLM(family=family, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                          solver=solver, fit_intercept=fit_intercept,
                          solver_options=method_options or None, **stopping))
    warm_up_seconds = None
    if warm_up == "round":
        warm_up_round(X_train, y_train, family_obj)
    elif warm_up == "fits":
        warm_up_seconds = warm_up_fits(X_train, y_train, models)
    rows = []
    for method, model in zip(methods, models):
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(X_train, y_train)
        except ValueError as exc:
            rows.append(MethodResult(method, error=str(exc)))
            continue
        seconds = time.perf_counter() - start
        report = model.comm_
        passes, at_least = passes_over_data(model, n_train)
        rows.append(MethodResult(
            method, chosen=model.solver_ if model.solver == "auto" else None,
            iterations=int(np.max(model.n_iter_)), rounds=report.rounds, passes=passes,
            passes_at_least=at_least, bytes_measured=report.bytes_measured,
            bytes_modelled=report.bytes_modelled, seconds=seconds,
            seconds_waiting=report.seconds_waiting, converged=bool(model.converged_),
            model=model,
        ))
        if X_test is not None:
            rows[-1].score = _held_out_score(model, family_obj, X_test, y_test)

    done = [r for r in rows if r.ok]
    if done:  # every objective evaluated the same way, on one engine over the training rows
        with make_engine(X_train, y_train, family=family_obj) as engine:
            for row in done:
                problem = Problem(family_obj, row.model._penalty(engine.sum_weight),
                                  bool(fit_intercept), n_features)
                objective = Objective(problem, engine)
                params = _params(row.model, fit_intercept)
                value, _ = objective.value_and_grad(params)
                row.objective = float(value + objective.nonsmooth_value(params))
        best = min(r.objective for r in done)
        for row in done:
            row.objective_gap = row.objective - best

    where = "dask arrays" if is_dask(X) else "in-memory arrays"
    name = getattr(family_obj, "name", str(family))
    description = (f"{name} family, {penalty} penalty alpha={alpha:g}, {n_train} training rows "
                   f"x {n_features} features ({where})"
                   + (f", {_n_rows(X_test)} held out" if X_test is not None else ""))
    return Comparison(rows, description, data_bytes=8 * n_train * n_features,
                      warm_up_seconds=warm_up_seconds)
