"""Projections: which method wins on another cluster, and where the ranking changes.

:func:`project` prices every recorded round of each method's fit on a target cluster
with :mod:`daskglm.accounting.costmodel` and ranks the methods; :func:`ranking_changes`
sweeps one property of the cluster (workers, bandwidth, latency) to find where the
ranking flips.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from .calibration import Calibration, calibrate
from .costmodel import Cluster, measured_seconds, predict, solver_rounds

__all__ = ["project", "Projection", "ranking_changes"]


@dataclass
class ProjectedMethod:
    """One method's measured and predicted times (seconds in its solver's rounds)."""

    method: str
    rounds: int
    measured: float
    predicted_here: float
    predicted_there: float
    terms_there: dict = field(default_factory=dict)

    @property
    def error(self) -> float:
        """Relative error of the prediction for the measured cluster."""
        return self.predicted_here / self.measured - 1.0 if self.measured > 0 else math.nan


@dataclass
class Projection:
    """Methods' times on the measured cluster and on a target cluster.

    Attributes
    ----------
    rows : list of ProjectedMethod
    calibration : Calibration
    target : Cluster
    ranking_here, ranking_there : list of str
        Methods from fastest to slowest (predicted); methods within 5% of each other
        count as tied and are listed alphabetically.
    changes : list of str
        Where, moving one parameter at a time from the measured cluster to the target,
        the ranking of the methods changes.
    """

    rows: list
    calibration: Calibration
    target: Cluster
    ranking_here: list
    ranking_there: list
    changes: list

    def to_frame(self):
        """The rows as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        return pd.DataFrame([
            {"method": r.method, "rounds": r.rounds, "measured_s": r.measured,
             "predicted_here_s": r.predicted_here, "error": r.error,
             "predicted_there_s": r.predicted_there, **{f"there_{k}_s": v for k, v in
                                                         r.terms_there.items()}}
            for r in self.rows
        ])

    def __repr__(self):
        lines = [self.calibration.describe(), f"target: {self.target.describe()}"]
        header = (f"{'method':<12}{'rounds':>7}{'measured s':>12}{'model here':>12}"
                  f"{'error':>8}{'model there':>13}{'latency':>9}{'overhead':>10}"
                  f"{'compute':>9}{'transfer':>10}")
        lines.append(header)
        for r in self.rows:
            t = r.terms_there
            lines.append(
                f"{r.method:<12}{r.rounds:>7}{r.measured:>12.3f}{r.predicted_here:>12.3f}"
                f"{100 * r.error:>7.0f}%{r.predicted_there:>13.3f}{t['latency']:>9.3f}"
                f"{t['overhead']:>10.3f}{t['compute']:>9.3f}{t['transfer']:>10.3f}"
            )
        lines.append("fastest first, measured cluster: " + " < ".join(self.ranking_here))
        lines.append("fastest first, target cluster:   " + " < ".join(self.ranking_there))
        lines += [f"ranking changes: {c}" for c in self.changes] or ["ranking changes: none"]
        return "\n".join(lines)


#: Predicted times within this fraction of each other count as a tie when ranking.
TIE = 0.05


def _order(times):
    """Method names fastest first; within a tie (:data:`TIE`) in alphabetical order, so
    that near-equal methods do not swap places on rounding."""
    names = sorted(times, key=times.get)
    groups = []
    for name in names:
        if groups and times[name] <= times[groups[-1][0]] * (1 + TIE):
            groups[-1].append(name)
        else:
            groups.append([name])
    return [name for group in groups for name in sorted(group)]


def _ranking(reports, cluster, calibration):
    return _order({name: predict(report, cluster, calibration)["total"]
                   for name, report in reports.items()})


def _sweep(start, stop, integral, steps=9):
    """Values from ``start`` to ``stop``, geometrically spaced; an infinite or zero end is
    stood in for by four decades beyond the other end."""
    a = stop * 1e4 if math.isinf(start) else start
    b = start * 1e4 if math.isinf(stop) else stop
    a = a if a > 0 else b * 1e-4
    b = b if b > 0 else a * 1e-4
    values = [start, *np.geomspace(a, b, steps)[1:-1], stop]
    if integral:
        values = list(dict.fromkeys(int(round(v)) for v in values))
    return values


def ranking_changes(reports, calibration, target):
    """Where the methods' ranking changes, moving one parameter at a time to ``target``.

    For each of workers, bandwidth, latency and throughput that differ between the
    measured cluster and ``target``, the parameter sweeps geometrically from its measured
    value to the target's while the others keep the target's values.

    Returns
    -------
    list of str
    """
    here = calibration.cluster
    changes = []
    for name in ("workers", "bandwidth", "latency", "throughput"):
        start, stop = getattr(here, name), getattr(target, name)
        if start is None or stop is None or start == stop:
            continue
        values = _sweep(float(start), float(stop), name == "workers")
        previous = None
        for value in values:
            value = int(value) if name == "workers" else value
            ranking = _ranking(reports, replace(target, **{name: value}), calibration)
            if previous is not None and ranking != previous[1]:
                changes.append(
                    f"{name} {previous[0]:.3g} -> {value:.3g}: "
                    f"{' < '.join(previous[1])}  becomes  {' < '.join(ranking)}"
                )
            previous = (value, ranking)
    return changes


def project(reports, target, calibration=None, *, data_bytes=None):
    """Predict each method's time in rounds on ``target``; say where the ranking changes.

    Parameters
    ----------
    reports : dict of str to CommReport
        The fits to project, by method name (one cluster).
    target : Cluster or str
        The hypothetical cluster, or a specification for :meth:`Cluster.parse` whose
        missing fields come from the calibrated cluster.
    calibration : Calibration, optional
        Default: :func:`calibrate` on ``reports``.
    data_bytes : int, optional
        Passed to :func:`calibrate`.

    Returns
    -------
    Projection
    """
    if calibration is None:
        calibration = calibrate(reports, data_bytes=data_bytes)
    if isinstance(target, str):
        base = replace(calibration.cluster, partitions=None)
        if calibration.engine == "local":  # no Dask scheduling was measured
            base = replace(base, step_overhead=None, worker_overhead=None,
                           scheduler_overhead=None)
        target = Cluster.parse(target, base=base)
    rows = []
    for name, report in reports.items():
        here = predict(report, calibration.cluster, calibration, here=True)
        there = predict(report, target, calibration)
        terms = {k: v for k, v in there.items() if k != "total"}
        rows.append(ProjectedMethod(name, len(solver_rounds(report)), measured_seconds(report),
                                    here["total"], there["total"], terms))
    ranking_here = _order({r.method: r.predicted_here for r in rows})
    ranking_there = _order({r.method: r.predicted_there for r in rows})
    return Projection(rows, calibration, target, ranking_here, ranking_there,
                      ranking_changes(reports, calibration, target))
