"""Fit several methods on the same data and compare what each one cost.

:func:`compare` fits one :class:`~daskglm.GLM` per method on the same training rows and
returns a :class:`Comparison`: one row per method with its iterations, rounds of
communication, bytes (measured from Dask's counters and modelled), seconds, seconds
workers spent waiting for the slowest partition, the gap of its objective to the best
one reached, and its score on held-out rows.  Every objective is evaluated the same way
after the fits (one extra round on the training data, not counted in the methods'
ledgers), so that the gaps compare like with like.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .engine import is_dask, make_engine
from .estimators import GLM
from .model.families import get_family
from .solvers import SOLVERS, Objective, Problem

__all__ = ["compare", "Comparison", "MethodResult", "format_table"]

#: Table columns: heading and the :class:`MethodResult` attribute shown.
COLUMNS = {
    "method": "method",
    "iterations": "iterations",
    "rounds": "rounds",
    "bytes measured": "bytes_measured",
    "bytes modelled": "bytes_modelled",
    "bytes per iteration": "bytes_per_iteration",
    "seconds": "seconds",
    "seconds waiting": "seconds_waiting",
    "objective": "objective",
    "objective gap": "objective_gap",
    "held-out score": "score",
}

#: Columns shown by default.
DEFAULT_COLUMNS = ("method", "iterations", "rounds", "bytes measured", "bytes modelled",
                   "seconds", "seconds waiting", "objective gap", "held-out score")


@dataclass
class MethodResult:
    """One method's fit in a :class:`Comparison`.

    Attributes
    ----------
    method : str
    iterations, rounds : int or None
    bytes_measured, bytes_modelled : int or None
        From the fit's :class:`~daskglm.accounting.ledger.CommReport`.
    seconds : float or None
        Wall time of ``fit``.
    seconds_waiting : float or None
        Thread-seconds workers waited for the slowest partition.
    objective : float or None
        Objective (mean loss + penalty) at the fitted coefficients, on the training rows.
    objective_gap : float or None
        ``objective`` minus the smallest objective of the comparison.
    score : float or None
        On the held-out rows: accuracy for the binomial family (the predicted mean
        thresholded at 1/2), else ``GLM.score`` (R^2 for the Gaussian family, D^2
        otherwise).
    converged : bool or None
    error : str or None
        Why the method did not run (it does not handle the problem), else None.
    model : GLM or None
        The fitted estimator.
    """

    method: str
    iterations: int | None = None
    rounds: int | None = None
    bytes_measured: int | None = None
    bytes_modelled: int | None = None
    seconds: float | None = None
    seconds_waiting: float | None = None
    objective: float | None = None
    objective_gap: float | None = None
    score: float | None = None
    converged: bool | None = None
    error: str | None = None
    model: object = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """Whether the method ran."""
        return self.error is None

    @property
    def report(self):
        """The fit's communication report (``model.comm_``), or None."""
        return getattr(self.model, "comm_", None)

    @property
    def bytes_per_iteration(self):
        """Modelled bytes of the fit divided by its iterations (None if it did not run):
        with the set-up rounds amortised, what one iteration costs; it grows with the
        number of features for methods that move the whole parameter vector."""
        if self.bytes_modelled is None or not self.iterations:
            return None
        return self.bytes_modelled / self.iterations


def _held_out_score(model, family, X_test, y_test):
    """Accuracy for the binomial family, ``model.score`` (R^2 or D^2) otherwise."""
    if family.name != "binomial":
        return float(model.score(X_test, y_test))
    predicted = model.predict(X_test) >= 0.5
    return float(((predicted == (y_test > 0.5)).mean()).compute()
                 if hasattr(predicted, "compute") else (predicted == (y_test > 0.5)).mean())


def _cell(value, name):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if name in ("bytes_measured", "bytes_modelled", "bytes_per_iteration"):
        return f"{int(value):,}"
    if name in ("seconds", "seconds_waiting"):
        return f"{value:.3f}"
    if name == "objective":
        return f"{value:.8f}"
    if name == "objective_gap":
        return f"{value:.2e}"
    if name == "score":
        return f"{value:.4f}"
    return str(value)


def format_table(header, rows):
    """Left-aligned text table: a header line, a rule, then one line per row."""
    rows = [[str(v) for v in row] for row in rows]
    header = [str(h) for h in header]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    first = "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()
    lines = [first, "-" * len(first)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


class Comparison:
    """The result of :func:`compare`: one :class:`MethodResult` per method.

    Attributes
    ----------
    rows : list of MethodResult
    description : str
        The problem and data compared on.
    data_bytes : int
        ``8 * n_train * n_features``, used to calibrate throughput in the cost model.
    """

    def __init__(self, rows, description="", data_bytes=None):
        self.rows = list(rows)
        self.description = description
        self.data_bytes = data_bytes

    def __getitem__(self, method):
        for row in self.rows:
            if row.method == method:
                return row
        raise KeyError(method)

    @property
    def best(self):
        """The method with the smallest objective, or None."""
        done = [r for r in self.rows if r.ok and r.objective is not None]
        return min(done, key=lambda r: r.objective).method if done else None

    @property
    def reports(self):
        """``{method: CommReport}`` of the methods that ran."""
        return {r.method: r.report for r in self.rows if r.ok and r.report is not None}

    def table(self, columns=DEFAULT_COLUMNS):
        """The comparison as a text table of ``columns`` (headings of :data:`COLUMNS`).

        A method that did not run shows ``-`` and, in the last column, ``n/a`` and why.
        """
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown:
            raise ValueError(f"Unknown column(s) {unknown}; choose from {list(COLUMNS)}.")
        lines = []
        for row in self.rows:
            if row.ok:
                lines.append([_cell(getattr(row, COLUMNS[c]), COLUMNS[c]) for c in columns])
            else:
                reason = row.error.split(";")[0]
                lines.append([row.method] + ["-"] * (len(columns) - 2) + [f"n/a: {reason}"])
        return format_table(columns, lines)

    def to_frame(self):
        """One row per method as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        names = [name for name in MethodResult.__dataclass_fields__ if name != "model"]
        return pd.DataFrame([{name: getattr(r, name) for name in names} for r in self.rows])

    def project(self, target, calibration=None):
        """Project the methods onto another cluster (:func:`daskglm.accounting.projection.project`)."""
        from .accounting.projection import project

        return project(self.reports, target, calibration, data_bytes=self.data_bytes)

    def curves(self):
        """Per method, the objective gap against bytes, rounds and seconds in rounds.

        Returns
        -------
        dict
            ``{method: {"gap": [...], "bytes": [...], "rounds": [...], "seconds": [...]}}``
            from the fit's ``history_`` (entries with an objective), ending at the
            objective evaluated after the fit.  Bytes are the measured ones when every
            round was measured on a cluster, else the modelled ones.
        """
        best = min((r.objective for r in self.rows if r.ok and r.objective is not None),
                   default=None)
        curves = {}
        for row in self.rows:
            report = row.report
            if not row.ok or report is None or best is None:
                continue
            measured = report.engine == "distributed" and all(
                r.bytes_measured is not None for r in report.records)
            per_round = [r.bytes_measured if measured else r.bytes_modelled
                         for r in report.records]
            cum_bytes = np.concatenate([[0], np.cumsum(per_round)])
            cum_seconds = np.concatenate([[0.0], np.cumsum([r.seconds for r in report.records])])
            points = [(e["objective"], int(e["rounds"])) for e in row.model.history_
                      if np.isfinite(e.get("objective", np.nan)) and "rounds" in e]
            points.append((row.objective, report.rounds))
            floor = 1e-16 * max(1.0, abs(best))
            curves[row.method] = {
                "gap": [max(obj - best, floor) for obj, _ in points],
                "rounds": [n for _, n in points],
                "bytes": [int(cum_bytes[min(n, len(cum_bytes) - 1)]) for _, n in points],
                "seconds": [float(cum_seconds[min(n, len(cum_seconds) - 1)]) for _, n in points],
            }
        return curves

    def plot(self, path):
        """Save objective gap against bytes, rounds and seconds for every method to ``path``.

        Needs matplotlib (``pip install "daskglm[plot]"``).
        """
        try:
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ImportError(
                'Plotting needs matplotlib: pip install "daskglm[plot]"'
            ) from exc
        fig = Figure(figsize=(15, 4.5), layout="constrained")
        axes = fig.subplots(1, 3, sharey=True)
        labels = {"bytes": "bytes communicated", "rounds": "rounds",
                  "seconds": "seconds in rounds"}
        for method, curve in self.curves().items():
            for ax, x in zip(axes, ("bytes", "rounds", "seconds")):
                ax.plot(curve[x], curve["gap"], marker=".", label=method)
        for ax, x in zip(axes, ("bytes", "rounds", "seconds")):
            ax.set_xlabel(labels[x])
            ax.set_yscale("log")
            if x == "bytes":
                ax.set_xscale("log")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("objective gap to the best")
        axes[-1].legend()
        if self.description:
            fig.suptitle(self.description)
        fig.savefig(path)
        return path

    def __repr__(self):
        head = f"{self.description}\n" if self.description else ""
        return head + self.table()


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


def _warm_up(X, y, family, rows=64):
    """One round on a few rows, so that the first method does not pay alone for what
    every worker does once (importing the package, first calls)."""
    X_few, y_few = X[:rows], y[:rows]
    if is_dask(X_few):
        X_few = X_few.compute()
    if is_dask(y_few):
        y_few = y_few.compute()
    X_few = X_few if hasattr(X_few, "indptr") else np.asarray(X_few)  # keep CSR sparse
    with make_engine(X_few, np.asarray(y_few), family=family):
        pass


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
            fit_intercept=True, test_size=0.2, tol=1e-8, max_iter=500, solver_options=None):
    """Fit each method on the same rows and tabulate what each one cost.

    Runs on the active ``distributed.Client`` if there is one, in this process otherwise.

    Parameters
    ----------
    X : ndarray or dask.array.Array of shape (n_samples, n_features)
    y : ndarray or dask.array.Array of shape (n_samples,)
    methods : list of str, optional
        Solver names, or the variants of :data:`METHOD_VARIANTS` (``"lbfgs-sharded"``:
        L-BFGS on column shards); default: every solver but those of :data:`ON_REQUEST`.
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

    Returns
    -------
    Comparison
    """
    methods = [m for m in SOLVERS if m not in ON_REQUEST] if methods is None else list(methods)
    unknown = [m for m in methods if m not in SOLVERS and m not in METHOD_VARIANTS]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; choose from "
                         f"{sorted(SOLVERS) + sorted(METHOD_VARIANTS)}.")
    X_train, y_train, X_test, y_test = _split(X, y, test_size)
    family_obj = get_family(family)
    n_train, n_features = _n_rows(X_train), int(X.shape[1])
    options = solver_options or {}
    _warm_up(X_train, y_train, family_obj)
    rows = []
    for method in methods:
        solver, variant = METHOD_VARIANTS.get(method, (method, {}))
        defaults = METHOD_DEFAULTS.get(method, {})
        method_options = {**variant, **defaults.get("options", {}),
                          **(options.get(method) or {})}
        model = GLM(family=family, penalty=penalty, alpha=alpha, l1_ratio=l1_ratio,
                    solver=solver, fit_intercept=fit_intercept, tol=tol,
                    max_iter=min(max_iter, defaults.get("max_iter", max_iter)),
                    solver_options=method_options or None)
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
        rows.append(MethodResult(
            method, iterations=int(np.max(model.n_iter_)), rounds=report.rounds,
            bytes_measured=report.bytes_measured, bytes_modelled=report.bytes_modelled,
            seconds=seconds, seconds_waiting=report.seconds_waiting,
            converged=bool(model.converged_), model=model,
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
    return Comparison(rows, description, data_bytes=8 * n_train * n_features)
