"""What :func:`~daskglm.comparison.compare` returns: a :class:`Comparison` of one
:class:`MethodResult` per method, as a text table, a data frame, curves of the objective
gap against bytes, rounds and seconds, a plot, or a projection onto another cluster."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Comparison", "MethodResult", "format_table", "COLUMNS", "DEFAULT_COLUMNS"]

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


#: Stochastic solvers: their ``history_`` holds per-epoch estimates of the objective.
STOCHASTIC = ("sgd", "async", "gossip")


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
        Passes over the training rows (:func:`~.passes.passes_over_data`); None where the ledger
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
        from ..accounting.projection import project

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
