"""Fit several methods on the same data and compare what each one cost.

:func:`compare` fits one :class:`~daskglm.GLM` per method on the same training rows and
returns a :class:`Comparison`: one row per method with its iterations, rounds of
communication, passes over the training rows (:func:`passes_over_data`), bytes (measured
from Dask's counters and modelled), seconds, seconds workers spent waiting for the
slowest partition, the gap of its objective to the best one reached, and its score on
held-out rows.  Every objective is evaluated the same way after the fits (one extra round
on the training data, not counted in the methods' ledgers), so that the gaps compare like
with like.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .accounting.kinds import Kind
from .engine import is_dask, make_engine
from .estimators import GLM
from .model.families import get_family
from .solvers import SOLVERS, Objective, Problem
from .solvers.round_sizing import FIRST_PROBE_STEPS

__all__ = ["compare", "Comparison", "MethodResult", "format_table", "passes_over_data",
           "EVERY_METHOD"]

#: Every ``solver=`` value of the estimators, ``"auto"`` first.
EVERY_METHOD = ("auto", *SOLVERS)

#: Table columns: heading and the :class:`MethodResult` attribute shown.
COLUMNS = {
    "method": "label",
    "iterations": "iterations",
    "rounds": "rounds",
    "passes": "passes_text",
    "bytes measured": "bytes_measured_text",
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
    chosen : str or None
        The solver a method of ``"auto"`` chose (``model.solver_``); None otherwise.
    iterations, rounds : int or None
    passes : float or None
        Passes over the training rows (:func:`passes_over_data`); None where the ledger
        holds rounds whose reads it cannot count.
    passes_at_least : bool
        Whether ``passes`` is a lower bound (local solves) rather than a count.
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
    chosen: str | None = None
    iterations: int | None = None
    rounds: int | None = None
    passes: float | None = None
    passes_at_least: bool = False
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
    def label(self):
        """The method, and for ``"auto"`` the solver it chose: ``"auto (newton)"``."""
        return self.method if self.chosen is None else f"{self.method} ({self.chosen})"

    @property
    def bytes_unmeasured(self):
        """Modelled bytes of the fit's rounds that Dask's counters do not see (a parameter
        holder's pushes and pulls: actor calls), 0 when every round was measured; None
        if the method did not run."""
        report = self.report
        if not self.ok or report is None:
            return None
        return sum(r.bytes_modelled for r in report.records if r.bytes_measured is None)

    @property
    def bytes_measured_text(self):
        """``bytes_measured`` as shown in a table, followed by ``+ N modelled`` where
        some rounds were not measured (:attr:`bytes_unmeasured`)."""
        if self.bytes_measured is None:
            return None
        text = f"{int(self.bytes_measured):,}"
        unmeasured = self.bytes_unmeasured
        return f"{text} + {unmeasured:,} modelled" if unmeasured else text

    @property
    def passes_text(self):
        """``passes`` as shown in a table: a whole number, else one decimal; ``>=``
        before a lower bound; None where not counted."""
        if self.passes is None:
            return None
        value = self.passes
        text = f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
        return f">={text}" if self.passes_at_least else text

    @property
    def bytes_per_iteration(self):
        """Modelled bytes of the fit divided by its iterations (None if it did not run):
        with the set-up rounds amortised, what one iteration costs; it grows with the
        number of features for methods that move the whole parameter vector."""
        if self.bytes_modelled is None or not self.iterations:
            return None
        return self.bytes_modelled / self.iterations


#: Kinds of rounds that read the features of every training row once: one pass each.
PASS_KINDS = frozenset({
    Kind.VALIDATE, Kind.MAXIMA, Kind.SCALE, Kind.GRADIENT, Kind.HESSIAN, Kind.GRAM,
    Kind.VALIDATE_GRAM, Kind.VALIDATE_GRADIENT, Kind.VALIDATE_HESSIAN,
    Kind.COMPRESSED_GRADIENT, Kind.DEADLINE_GRADIENT, Kind.SPARSE_GRADIENT,
    Kind.SHARD_COLUMNS, Kind.BLOCK_SPLIT, Kind.BLOCK_GRADIENT, Kind.INFERENCE,
    Kind.ROBUST,
    Kind.CLASS_MOMENTS, Kind.FOLD_GRAM,
})
#: Kinds of rounds of stochastic solvers, whose reads are counted by epochs (an epoch reads
#: every training row once; ``n_iter_`` counts them).
EPOCH_KINDS = frozenset({
    Kind.SGD_BATCH, Kind.LOCAL_SGD, Kind.COMPRESSED_BATCH, Kind.COMPRESSED_LOCAL_SGD,
    Kind.DEADLINE_BATCH, Kind.ASYNC_SGD, Kind.GOSSIP,
})
#: Local solves (ADMM, averaging): every partition's L-BFGS-B reads its rows once per
#: evaluation; only the iterations of the longest solve are recorded (``local_iterations``).
LOCAL_KINDS = frozenset({Kind.LOCAL_SOLVE})
#: Kinds of rounds that read no row's features: sizes, targets only, model state,
#: parameters, column shards.
NO_PASS_KINDS = frozenset({
    Kind.SIZES, Kind.ENCODE, Kind.TARGET_MEAN, Kind.NULL_MODEL, Kind.PUSH, Kind.PULL,
    Kind.PUT_STATE, Kind.FETCH_STATE, Kind.SHARD_REGISTER, Kind.SHARD_PULL, Kind.SHARD_PUSH,
    Kind.SHARD_OP, Kind.SHARD_LOAD, Kind.SHARD_FETCH, Kind.GOSSIP_EXCHANGE,
    Kind.GOSSIP_START, Kind.GOSSIP_FETCH,
})
#: Kinds of rounds whose reads this module does not count (a part of the rows: folds,
#: held-out rows; or whatever columns a driver pass reads): a ledger holding one has no
#: pass count.
UNCOUNTED_KINDS = frozenset({Kind.HELD_OUT, Kind.LEAVE_ONE_OUT, Kind.FOLD_MOMENTS,
                             Kind.VALIDATION_SCORE, Kind.DRIVER_PASS})


def _probe_passes(model, n_rows, probes):
    """Share of an epoch read by SGD's ``probes`` timing rounds (``sync_every="auto"``):
    rounds of 64, 128, 256, ... steps of ``batch_size`` rows, at most one epoch each
    (:class:`daskglm.solvers.round_sizing.StepTimer`), their results dropped."""
    history = getattr(model, "history_", None) or []
    steps_per_epoch = history[0].get("steps") if history else None
    batch = (getattr(model, "solver_options_", None) or {}).get("batch_size")
    if not steps_per_epoch or not batch or not n_rows:
        return None
    steps = [min(FIRST_PROBE_STEPS * 2**k, steps_per_epoch) for k in range(probes)]
    return sum(min(k * batch, n_rows) for k in steps) / n_rows


def passes_over_data(model, n_rows=None):
    """Passes over the training rows a fitted estimator's rounds made: ``(passes,
    at_least)``, from its ledger (``model.comm_``) and ``history_``.

    * A round that reads the features of every training row (validation, a gradient, a
      Hessian, a Gram matrix: :data:`PASS_KINDS`) counts 1.
    * Stochastic rounds (:data:`EPOCH_KINDS`) count by epochs: each of the ``n_iter_``
      epochs reads every row once, whatever its number of rounds; SGD's timing rounds
      (``step_probe``) add the share of an epoch they read (needs ``n_rows``).
    * A local-solve round (ADMM, averaging) reads each partition's rows once per L-BFGS-B
      evaluation, and only the iterations of the longest local solve are recorded: the
      count is then a lower bound for the rows of that partition, ``1 + iterations`` per
      round (``at_least`` True).
    * Rounds that move sizes, targets or parameters only count 0.

    ``passes`` is None where the ledger holds a round whose reads are not counted here.
    """
    report = model.comm_
    counts = {}
    for record in report.records:
        counts[record.kind] = counts.get(record.kind, 0) + 1
    known = PASS_KINDS | EPOCH_KINDS | LOCAL_KINDS | NO_PASS_KINDS | {Kind.STEP_PROBE}
    if any(kind not in known for kind in counts):
        return None, False
    passes = float(sum(n for kind, n in counts.items() if kind in PASS_KINDS))
    if any(kind in EPOCH_KINDS for kind in counts):
        passes += int(np.max(model.n_iter_))
    if counts.get(Kind.STEP_PROBE):
        probes = _probe_passes(model, n_rows, counts[Kind.STEP_PROBE])
        if probes is None:
            return None, False
        passes += probes
    at_least = False
    if counts.get(Kind.LOCAL_SOLVE):
        local = [entry["local_iterations"] for entry in model.history_
                 if "local_iterations" in entry]
        if len(local) == counts[Kind.LOCAL_SOLVE]:
            passes += sum(1 + int(n) for n in local)
        else:  # at least one read per local solve
            passes += counts[Kind.LOCAL_SOLVE]
        at_least = True
    return passes, at_least


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
    warm_up_seconds : float or None
        Wall time of the untimed warm-up before the fits (``compare``'s ``warm_up``):
        what a first fit would otherwise pay once, such as compiling or loading the
        compiled loops on every worker.
    """

    def __init__(self, rows, description="", data_bytes=None, warm_up_seconds=None):
        self.rows = list(rows)
        self.description = description
        self.data_bytes = data_bytes
        self.warm_up_seconds = warm_up_seconds

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
            ``{method: {"gap": [...], "bytes": [...], "rounds": [...], "seconds": [...],
            "measured": bool, "estimated": bool}}`` from the fit's ``history_`` (entries
            with an objective), ending at the objective evaluated after the fit.  Bytes
            are the measured ones when every round was measured on a cluster
            (``measured``), else the modelled ones.  ``estimated``: the history's
            objectives are the stochastic solvers' per-epoch estimates (the mean over the
            epoch's rows of each row's loss at the iterate it was read at, plus the
            penalty), not the objective at an iterate; only the last point is exact.
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
                "measured": measured,
                "estimated": (row.chosen or row.method) in STOCHASTIC and len(points) > 1,
            }
        return curves

    def plot(self, path, against=("bytes", "rounds", "seconds")):
        """Save the objective gap of every method against each of ``against`` (``"bytes"``,
        ``"rounds"``, ``"seconds"``: one panel each) to ``path``; returns ``path``.

        One line per method from its ``history_`` (a single point where the history has
        no objective at an iterate, as for averaging); the stochastic solvers' per-epoch
        estimates dotted (see :meth:`curves`).  Needs matplotlib (``pip install
        "daskglm[plot]"``).
        """
        try:
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ImportError(
                'Plotting needs matplotlib: pip install "daskglm[plot]"'
            ) from exc
        against = tuple(against)
        unknown = [x for x in against if x not in ("bytes", "rounds", "seconds")]
        if unknown or not against:
            raise ValueError(f"against: choose from 'bytes', 'rounds' and 'seconds'; got "
                             f"{list(against)}.")
        curves = self.curves()
        modelled = [method for method, c in curves.items() if not c["measured"]]
        if not modelled:
            source = "measured"
        elif len(modelled) == len(curves):
            source = "modelled"
        else:
            source = f"measured; modelled for {', '.join(modelled)}"
        fig = Figure(figsize=(5 * len(against) + 1, 4.5), layout="constrained")
        axes = np.atleast_1d(fig.subplots(1, len(against), sharey=True))
        labels = {"bytes": f"bytes communicated ({source})", "rounds": "rounds",
                  "seconds": "seconds in rounds"}
        best = min((r.objective for r in self.rows if r.ok and r.objective is not None),
                   default=0.0)
        floor = 1e-16 * max(1.0, abs(best))
        for method, curve in curves.items():
            label = f"{method} (per-epoch estimates)" if curve["estimated"] else method
            # an estimate below the best objective has no place on a log scale
            keep = [i for i, gap in enumerate(curve["gap"])
                    if not curve["estimated"] or gap > floor or i == len(curve["gap"]) - 1]
            for ax, x in zip(axes, against):
                ax.plot([curve[x][i] for i in keep], [curve["gap"][i] for i in keep],
                        marker="." if len(keep) > 1 else "o",
                        linestyle=":" if curve["estimated"] else "-", label=label)
        for ax, x in zip(axes, against):
            ax.set_xlabel(labels[x])
            ax.set_yscale("log")
            if x == "bytes":
                ax.set_xscale("log")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("objective gap to the best (the best drawn at 1e-16)")
        axes[-1].legend(fontsize="small")
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


def _first_rows_of_every_partition(X, y, rows):
    """The first ``rows`` rows of every row chunk of Dask ``X`` and ``y`` (each computed
    where its chunk lives), or the first ``8 * rows`` rows of in-memory arrays."""
    if not is_dask(X):
        return X[: 8 * rows], y[: 8 * rows]
    if not is_dask(y):
        import dask.array as da

        y = da.from_array(np.asarray(y), chunks=(X.chunks[0],))
    elif y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    sizes = tuple(min(rows, n) for n in X.chunks[0])
    X_few = X.map_blocks(lambda block: block[:rows], chunks=(sizes, X.chunks[1]),
                         dtype=X.dtype)
    y_few = y.map_blocks(lambda block: block[:rows], chunks=(sizes,), dtype=y.dtype)
    return X_few, y_few


#: Methods whose compiled loops one worker compiles while another compiles the others'
#: (:func:`_compile_apart`), balanced by their first-compile times on two cores: the
#: fused loss, gradient and Hessian loops of the batch methods with parameter-server SGD
#: (about 7 s and 2.5 s), against the local SGD loops of ``sgd`` and ``gossip`` (5 to 10 s).
COMPILE_GROUPS = (("normal", "newton", "lbfgs", "gd", "proximal", "admm", "averaging",
                   "async"), ("sgd", "gossip"))


def _small_fit(model, X, y):
    """Fit ``model`` for at most 2 iterations, warnings silenced, a method that does not
    apply ignored."""
    from sklearn.base import clone

    small = clone(model).set_params(max_iter=min(2, model.max_iter))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            small.fit(X, y)
    except ValueError:  # the method does not apply: its timed fit says why
        pass


def _compile_in_process(models, X, y):
    """On a worker: fit ``models`` in this process (an in-memory engine), so that numba
    compiles their loops here and writes them to its on-disk cache.  Skipped where the
    worker has a client of its own (a fit would then run on the cluster)."""
    from .engine.distributed import active_client

    if active_client() is not None:
        return False
    for model in models:
        _small_fit(model, X, y)
    return True


def _compile_apart(client, models, X, y, rows=256):
    """Each worker fits, in its own process and at the same time as the others, the
    models of one of :data:`COMPILE_GROUPS` on the first ``rows`` training rows: the
    workers compile different loops at once and share them through numba's on-disk cache
    (``cache=True``), instead of each compiling every loop one method after the other."""
    X_few, y_few = X[:rows], y[:rows]
    X_few = X_few.compute() if is_dask(X_few) else X_few
    y_few = np.asarray(y_few.compute() if is_dask(y_few) else y_few)
    groups = [[] for _ in COMPILE_GROUPS]
    for model in models:
        solver = model.solver
        if solver == "sgd" and (model.solver_options or {}).get("sync_every", "auto") == "auto":
            # in this process "auto" is synchronous SGD; on a cluster, local SGD's loops
            options = {**(model.solver_options or {}), "sync_every": 4}
            model = GLM(**{**model.get_params(), "solver_options": options})
        index = next((i for i, group in enumerate(COMPILE_GROUPS) if solver in group), 0)
        groups[index].append(model)
    workers = sorted(client.nthreads())
    futures = [client.submit(_compile_in_process, group, X_few, y_few, pure=False,
                             workers=[workers[i % len(workers)]], allow_other_workers=False)
               for i, group in enumerate(groups) if group and workers]
    client.gather(futures)


def _warm_up_fits(X, y, models, rows=32):
    """Untimed: every worker compiles (or loads from numba's on-disk cache) the compiled
    loops of every method and runs each method's first calls, so that no timed fit pays
    for them.  On a cluster the workers first compile different methods' loops at once
    (:func:`_compile_apart`); then each of ``models`` is fitted (at most 2 iterations)
    on the first ``rows`` rows of every partition, on every worker.  Returns the wall
    time."""
    from .engine.distributed import active_client

    start = time.perf_counter()
    client = active_client()
    if client is not None:
        _compile_apart(client, [m for m in models if m.solver != "auto"], X, y)
    X_few, y_few = _first_rows_of_every_partition(X, y, rows)
    for model in models:
        _small_fit(model, X_few, y_few)
    return time.perf_counter() - start


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

#: Stochastic solvers: their ``history_`` holds per-epoch estimates of the objective.
STOCHASTIC = ("sgd", "async", "gossip")


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
        _warm_up(X_train, y_train, family_obj)
    elif warm_up == "fits":
        warm_up_seconds = _warm_up_fits(X_train, y_train, models)
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
