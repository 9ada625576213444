"""Calibration of the cost model: the cluster a set of fits ran on, from their records.

:func:`calibrate` derives each parameter of a :class:`~.costmodel.Cluster` (bandwidth,
latency, the cores' throughput, the per-step, per-task and per-call overheads) from its
own measurement in the fits' :class:`~daskglm.accounting.ledger.CommReport` s, so that the
cost model (:mod:`daskglm.accounting.costmodel`) is checked, not fitted, when it predicts
the rounds' wall times.  The formulas are written out in ``docs/costs.md`` ("Projecting
onto another cluster").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .costmodel import (
    DIRECT_STEPS,
    FUSED_KINDS,
    LEVEL_STEPS,
    ROUND_STEPS,
    SETUP_KINDS,
    Cluster,
    direct_levels,
    seconds_or_zero,
)
from .kinds import Kind

__all__ = ["Calibration", "calibrate"]

#: Transfers up to this size (bytes) measure latency; rounds moving more than this per
#: transfer measure bandwidth.
SMALL_TRANSFER = 64 * 1024

#: Round kinds that read every row of X once, in order of preference, for throughput.
ONE_PASS_KINDS = (Kind.GRADIENT, Kind.VALIDATE)


@dataclass
class Calibration:
    """The cluster a set of fits ran on, as the cost model sees it.

    Attributes
    ----------
    cluster : Cluster
        Workers and threads, and the calibrated bandwidth, latency, throughput and
        overheads.
    engine : str
        ``"distributed"`` or ``"local"``.
    rounds : int
        Records the calibration used.
    data_bytes : int or None
    """

    cluster: Cluster
    engine: str
    rounds: int
    data_bytes: int | None = None

    def describe(self):
        return f"calibrated on {self.rounds} {self.engine} rounds: {self.cluster.describe()}"


def _robust(values_by_kind):
    """Median over kinds of the per-kind medians (None when there is nothing)."""
    medians = [float(np.median(v)) for v in values_by_kind.values() if v]
    return float(np.median(medians)) if medians else None



def calibrate(reports, data_bytes=None):
    """Calibrate the cost model on fits' communication reports (see the module docstring).

    Parameters
    ----------
    reports : CommReport, list of CommReport or dict of name to CommReport
        Fits that ran on the same cluster (their ``comm_``).
    data_bytes : int, optional
        Size of the training data, ``8 * n_samples * n_features``; needed to state
        throughput in bytes per second.

    Returns
    -------
    Calibration
    """
    if hasattr(reports, "records"):
        reports = [reports]
    reports = list(reports.values()) if isinstance(reports, dict) else list(reports)
    records = [r for report in reports for r in report.records]
    if not records:
        raise ValueError("Nothing to calibrate on: the reports hold no rounds.")
    engine = reports[0].engine or "local"
    workers = max(1, int(reports[0].workers or 1))
    cores = max(workers, int(reports[0].cores or workers))

    # latency: half the median round trip of small transfers
    trips = [r.seconds_transferring / r.transfers for r in records
             if r.transfers and (r.bytes_transferred or 0) / r.transfers <= SMALL_TRANSFER]
    latency = float(np.median(trips)) / 2 if trips else 0.0

    # bandwidth: transfer time beyond the round trips, against bytes, over large transfers
    large = [r for r in records
             if r.transfers and (r.bytes_transferred or 0) / r.transfers > SMALL_TRANSFER]
    bandwidth = math.inf
    if large:
        x = np.array([r.bytes_transferred for r in large], dtype=float)
        y = np.array([r.seconds_transferring - 2 * latency * r.transfers for r in large])
        slope = float(x @ y / (x @ x))
        if slope > 0:
            bandwidth = 1.0 / slope

    # throughput: bytes of X per core-second in a one-pass round
    throughput = None
    if data_bytes:
        for kind in ONE_PASS_KINDS:
            seconds = [r.seconds_compute for r in records if r.kind == kind and r.seconds_compute]
            if seconds:
                throughput = float(data_bytes) / float(np.median(seconds))
                break

    by_kind, direct_by_kind, fused_by_kind = {}, {}, {}
    for r in records:
        if r.kind in FUSED_KINDS:
            fused_by_kind.setdefault(r.kind, []).append(r)
        elif r.kind not in SETUP_KINDS:
            rounds = direct_by_kind if r.route == "direct" else by_kind
            rounds.setdefault(r.kind, []).append(r)
    if not by_kind:  # every solver round ran direct: the task rounds they fused with
        by_kind = fused_by_kind

    # one message step: a quarter of a level of combine tasks, less the network's latency;
    # without combine tasks, an eighth of what a round adds to its span
    level = _robust({kind: [r.seconds_tree / r.depth for r in rs
                            if r.seconds_tree is not None and r.depth]
                     for kind, rs in by_kind.items()})
    if level is None:
        level = _robust({kind: [(r.seconds - r.seconds_span) * LEVEL_STEPS / ROUND_STEPS
                                for r in rs if r.seconds_span is not None]
                         for kind, rs in by_kind.items()})
    step = max(0.0, level / LEVEL_STEPS - latency) if level is not None else 0.0

    # per task on a worker thread: the span's time neither computing nor waiting
    def gaps(r):
        tasks = max(1, r.groups or r.partitions)
        used = min(cores, tasks)
        return (used * r.seconds_span - seconds_or_zero(r.seconds_compute)
                - seconds_or_zero(r.seconds_waiting)) / tasks

    worker = _robust({kind: [gaps(r) for r in rs if r.seconds_span is not None]
                      for kind, rs in by_kind.items()})
    worker = max(0.0, worker) if worker is not None else 0.0

    # per task on the scheduler and client: the wall time left after span, tree and steps
    def left(r):
        rest = (r.seconds - seconds_or_zero(r.seconds_span) - seconds_or_zero(r.seconds_tree)
                - ROUND_STEPS * (latency + step))
        return rest / max(1, r.tasks)

    scheduler = _robust({kind: [left(r) for r in rs] for kind, rs in by_kind.items()})
    scheduler = max(0.0, scheduler) if scheduler is not None else 0.0

    # per direct round: the wall time left after the span and the call's two messages
    def call_left(r):
        levels = max(1, direct_levels(workers, r.split_every))
        return (r.seconds - seconds_or_zero(r.seconds_span) - DIRECT_STEPS * levels * latency) / levels

    call = _robust({kind: [call_left(r) for r in rs] for kind, rs in direct_by_kind.items()})
    call = max(0.0, call) if call is not None else 0.0
    cluster = Cluster(workers, max(1, cores // workers), bandwidth, latency, throughput,
                      step_overhead=step, worker_overhead=worker, scheduler_overhead=scheduler,
                      call_overhead=call)
    return Calibration(cluster, engine, len(records), data_bytes)
