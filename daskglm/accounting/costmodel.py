"""How long would these fits take on another cluster?  A cost model of engine rounds.

Every round of a fit (a :class:`~daskglm.accounting.round_record.RoundRecord`) is priced on a
cluster described by a :class:`Cluster` (workers, threads, the network's bandwidth and
latency, the cores' throughput and three software costs of Dask): message steps on the
round's critical path, per-task overheads, the span of its measured compute and the
bytes it transfers, priced as the task, direct or parameter-holder round it was, under
the topology it used.  :func:`~daskglm.accounting.calibration.calibrate` derives the cluster the fits ran on from their
records alone, each parameter from its own measurement, so that the model is checked,
not fitted, when it predicts the rounds' wall times.  The formulas and the calibration
are written out in ``docs/costs.md`` ("Projecting onto another cluster").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from .bytemodel import CALL_BYTES, TASK_BYTES, top_partials, tree_depth, tree_tasks
from .kinds import Kind
from .layouts import layout_bytes  # the bytes of data layouts for many features

__all__ = [
    "Cluster", "round_seconds", "predict", "solver_rounds", "measured_seconds",
    "DEFAULT_TASK_OVERHEAD", "SETUP_KINDS", "FUSED_KINDS", "layout_bytes",
]

#: Per-task overhead (seconds) assumed for the scheduler and for the workers when the
#: calibration run was in-process, the order of magnitude Dask's documentation gives.
DEFAULT_TASK_OVERHEAD = 1e-3

#: Round kinds every fit runs once before its solver, left out of calibration and
#: predictions: they are the same for every method, and on Dask arrays the validation
#: round also builds the partitions from the array's chunks, which is loading data.
SETUP_KINDS = (Kind.VALIDATE,)

#: The validation round fused with a solver's first evaluation: priced as a solver
#: round (it is one), but left out of calibration, since it also checks the data and, on
#: Dask arrays, builds the partitions.
FUSED_KINDS = (Kind.VALIDATE_GRAM, Kind.VALIDATE_GRADIENT, Kind.VALIDATE_HESSIAN)

#: Traffic of partitions with column shards, recorded apart from the evaluation round it
#: runs in (:mod:`daskglm.engine.shards`): priced as its bytes and one latency per call
#: and worker thread, no round of its own.
IN_ROUND_KINDS = (Kind.SHARD_REGISTER, Kind.SHARD_PULL, Kind.SHARD_PUSH)

#: Message steps of a round besides its tree levels, and per tree level.
ROUND_STEPS, LEVEL_STEPS = 8, 4

#: Message steps of a direct round: the calls out, the answers back.
DIRECT_STEPS = 2

#: The engine's default fan-in: a direct gather round (which records none) runs direct
#: on at most its square of workers.
DEFAULT_SPLIT_EVERY = 8


def direct_levels(workers, split_every):
    """Levels of calls of a direct round on ``workers`` (see
    :class:`~daskglm.engine.direct.DirectRounds`): 1 when the driver calls every holder
    (at most ``split_every`` workers), 2 when it calls teams' first holders, which call
    the rest (at most ``split_every ** 2``), 0 beyond (the engine runs tasks)."""
    k = split_every or DEFAULT_SPLIT_EVERY
    return 1 if workers <= k else 2 if workers <= k * k else 0


@dataclass(frozen=True)
class Cluster:
    """A cluster to price rounds on.

    Parameters
    ----------
    workers : int
        Worker processes.
    threads_per_worker : int
    bandwidth : float
        Bytes per second of one network link (``math.inf``: free).
    latency : float
        Seconds per message on the network.
    throughput : float, optional
        Bytes of ``X`` one core processes per second in a one-pass round; None means as
        fast as the cores of the calibration run.
    step_overhead, worker_overhead, scheduler_overhead : float, optional
        Dask's software costs (see the module docstring); None uses the calibrated ones.
    call_overhead : float, optional
        Seconds a direct round (calls to partition holders, past the scheduler) adds
        besides its compute and two messages; None uses the calibrated one.
    partitions : int, optional
        Partitions of the data on this cluster; None keeps the run's partitions, or one
        per core when there are more cores.
    """

    workers: int
    threads_per_worker: int = 1
    bandwidth: float = math.inf
    latency: float = 0.0
    throughput: float | None = None
    step_overhead: float | None = None
    worker_overhead: float | None = None
    scheduler_overhead: float | None = None
    partitions: int | None = None
    call_overhead: float | None = None

    def __post_init__(self):
        if int(self.workers) < 1 or int(self.threads_per_worker) < 1:
            raise ValueError("A cluster needs at least one worker with one thread.")
        if not self.bandwidth > 0 or self.latency < 0:
            raise ValueError("bandwidth must be > 0 and latency >= 0.")
        if self.throughput is not None and not self.throughput > 0:
            raise ValueError("throughput must be > 0.")

    @property
    def cores(self) -> int:
        """Worker threads in all."""
        return int(self.workers) * int(self.threads_per_worker)

    @classmethod
    def parse(cls, spec, base=None):
        """A cluster from ``"workers=64,bandwidth=1e9,latency=1e-3"``.

        Parameters
        ----------
        spec : str
            Comma-separated ``name=value`` pairs naming fields of :class:`Cluster`
            (``threads`` is short for ``threads_per_worker``).
        base : Cluster, optional
            Where the fields ``spec`` leaves out come from (e.g. the calibrated cluster).

        Returns
        -------
        Cluster
        """
        names = {f.name for f in fields(cls)}
        values = {}
        for item in filter(None, (part.strip() for part in spec.split(","))):
            name, sep, text = item.partition("=")
            name = {"threads": "threads_per_worker"}.get(name.strip(), name.strip())
            if not sep or name not in names:
                raise ValueError(
                    f"Cannot read {item!r}: expected name=value with name one of {sorted(names)}."
                )
            number = float(text)
            integral = name in ("workers", "threads_per_worker", "partitions")
            values[name] = int(number) if integral else number
        if base is None:
            if "workers" not in values:
                raise ValueError("The cluster specification needs workers=N.")
            return cls(**values)
        return replace(base, **values)

    def describe(self):
        """A one-line summary."""
        def seconds(value):
            return "calibrated" if value is None else f"{value:.3g} s"

        bandwidth = "inf" if math.isinf(self.bandwidth) else f"{self.bandwidth:.3g} B/s"
        throughput = "as measured" if self.throughput is None else f"{self.throughput:.3g} B/s"
        return (f"{self.workers} workers x {self.threads_per_worker} threads, bandwidth "
                f"{bandwidth}, latency {self.latency:.3g} s, throughput {throughput}/core; "
                f"overhead per step {seconds(self.step_overhead)}, per task on a worker "
                f"{seconds(self.worker_overhead)}, per task on the scheduler "
                f"{seconds(self.scheduler_overhead)}, per direct round "
                f"{seconds(self.call_overhead)}")


def seconds_or_zero(value):
    """``value`` as a float; 0 when it is None or not finite (a time not measured)."""
    return 0.0 if value is None or not np.isfinite(value) else float(value)


def _overheads(cluster, calibration, here):
    """``(step, worker, scheduler, call)`` overheads for ``cluster``, filled from the
    calibration."""
    calibrated = calibration.cluster if calibration is not None else Cluster(1)
    local = calibration is not None and calibration.engine == "local" and not here
    values = []
    for name in ("step_overhead", "worker_overhead", "scheduler_overhead", "call_overhead"):
        value = getattr(cluster, name)
        if value is None:
            value = DEFAULT_TASK_OVERHEAD if local and name in (
                "worker_overhead", "scheduler_overhead") else (getattr(calibrated, name) or 0.0)
        values.append(float(value))
    return values


def round_seconds(record, cluster, calibration=None, *, here=False):
    """Predicted seconds of one round on ``cluster``, by term.

    Parameters
    ----------
    record : RoundRecord
    cluster : Cluster
    calibration : Calibration, optional
        Supplies the measured throughput and the overheads ``cluster`` leaves unset.
    here : bool
        Price the round with its own partitions on the calibration run's cluster.

    Returns
    -------
    dict
        ``latency`` (message steps), ``overhead`` (scheduler and worker overheads),
        ``compute`` and ``transfer`` seconds.
    """
    if record.kind in (Kind.PUSH, Kind.PULL):
        return _holder_seconds(record, cluster)
    if record.kind in IN_ROUND_KINDS:
        moved = record.bytes_sent + record.bytes_returned
        return {"latency": record.tasks / cluster.cores * cluster.latency, "overhead": 0.0,
                "compute": 0.0,
                "transfer": 0.0 if math.isinf(cluster.bandwidth) else moved / cluster.bandwidth}
    P0 = max(1, int(record.partitions or record.tasks))
    G0 = max(1, int(record.groups or P0))
    if here:
        P, G = P0, G0
    else:
        P = int(cluster.partitions) if cluster.partitions else max(P0, cluster.cores)
        # a round runs one task per worker thread holding partitions, unless the run
        # submitted one task per partition
        G = P if G0 == P0 > cluster_cores(calibration, cluster) else min(P, cluster.cores)
    k = record.split_every
    tree = k is not None
    topology = (record.topology or "tree") if tree else None
    T = G + tree_tasks(G, k) if tree else G
    D = tree_depth(G, k) if tree else 0
    if topology == "server":
        T, D = G + 1, 1
    elif topology == "ring":
        T, D = 3 * G + 2 * G * (G - 1) + 1, 2 * (G - 1)
    waves = math.ceil(P / cluster.cores)
    task_waves = math.ceil(G / cluster.cores)
    step, worker, scheduler, call = _overheads(cluster, calibration, here)
    levels = direct_levels(int(cluster.workers), k) if record.route == "direct" else 0
    if here and record.route == "direct":
        levels = max(1, levels)
    direct = levels > 0

    # compute: measured work, rescaled to the cores' speed, spread in waves
    work = seconds_or_zero(record.seconds_compute)
    imbalance = 1.0 + (seconds_or_zero(record.seconds_waiting) / work if work > 0 else 0.0)
    speed = 1.0
    if cluster.throughput is not None and not here:
        measured = None if calibration is None else calibration.cluster.throughput
        if measured is None:
            raise ValueError(
                "A target throughput needs the calibration's: pass data_bytes to calibrate()."
            )
        speed = measured / cluster.throughput
    compute = work * speed * waves / P * imbalance

    # transfer: task messages out, partials up the tree, the result to the client
    down = record.bytes_sent / G0
    if direct:  # one call per worker and its answer: the worker's partials merged there
        holders = min(int(cluster.workers), G)
        up = result_bytes(record)
        # the partials the holders send: one each, unless their partitions are not
        # neighbours in the tree (the record says how many the driver got)
        answers = record.gathered if here and record.gathered else holders
        moved = holders * (down + CALL_BYTES) + answers * up + holders * CALL_BYTES
        return {
            "latency": DIRECT_STEPS * levels * cluster.latency,
            "overhead": levels * call + task_waves * worker,
            "compute": compute,
            "transfer": 0.0 if math.isinf(cluster.bandwidth) else moved / cluster.bandwidth,
        }
    if topology == "server":  # every partial over the server's one link
        up = result_bytes(record)
        crossing = 1.0 - 1.0 / min(int(cluster.workers), G)
        moved = G * (down + TASK_BYTES) + G * crossing * (up + TASK_BYTES) + 2 * up
    elif topology == "ring":  # each step, every link carries one chunk at once
        up = result_bytes(record)
        moved = G * (down + TASK_BYTES) + D * (up / G + TASK_BYTES) + 2 * up
    elif tree:
        up = result_bytes(record)
        crossing = 1.0 - 1.0 / min(int(cluster.workers), k)
        top, feeding = top_partials(G, k), D * k
        if here and record.partials:  # as many partials as the round's tasks returned
            top = record.gathered or top
            feeding = max(0, record.partials - top)
        moved = (G * (down + TASK_BYTES) + crossing * (feeding * up + D * k * TASK_BYTES)
                 + 2 * top * up)
    else:
        up = record.bytes_returned / P0
        moved = G * (down + TASK_BYTES) + 2 * P * up
    transfer = 0.0 if math.isinf(cluster.bandwidth) else moved / cluster.bandwidth

    return {
        "latency": (ROUND_STEPS + LEVEL_STEPS * D) * (cluster.latency + step),
        "overhead": T * scheduler + task_waves * worker,
        "compute": compute,
        "transfer": transfer,
    }


def result_bytes(record):
    """One task's result in a tree round's record, whatever its topology summed it with."""
    groups = max(1, int(record.groups or record.partitions or 1))
    if record.topology == "server":
        return record.bytes_returned / (groups + 1)
    if record.topology == "ring":
        return record.bytes_returned / (2 * (groups - 1) + 1)
    return record.bytes_returned / max(1, record.partials or record.tasks)


def as_topology(record, topology):
    """A copy of a tree round's record as if its partials had been summed by ``topology``
    (``"tree"``, ``"server"`` or ``"ring"``), for :func:`round_seconds` to price: the same
    results, with that topology's tasks and returned bytes (see
    :mod:`daskglm.engine.topologies`)."""
    if record.split_every is None:
        raise ValueError(f"A {record.kind!r} round gathers its results: it has no topology.")
    groups = max(1, int(record.groups or record.partitions or 1))
    result = result_bytes(record)
    partials = gathered = 0
    if topology == "tree":
        tasks = groups + tree_tasks(groups, record.split_every)
        if record.topology in (None, "tree"):
            partials, gathered = record.partials, record.gathered
        returned = (partials or tasks) * result
    elif topology == "server":
        tasks, returned = groups + 1, (groups + 1) * result
    elif topology == "ring":
        tasks = 3 * groups + 2 * groups * (groups - 1) + 1
        returned = (2 * (groups - 1) + 1) * result
    else:
        raise ValueError(f"topology must be 'tree', 'server' or 'ring'; got {topology!r}.")
    return replace(record, topology=None if topology == "tree" else topology, tasks=tasks,
                   bytes_returned=int(round(returned)), partials=partials, gathered=gathered)


def _holder_seconds(record, cluster):
    """A holder's ``push`` or ``pull`` record: its calls as round trips to one worker."""
    moved = record.bytes_sent + record.bytes_returned
    return {
        "latency": 2 * record.tasks * cluster.latency / max(1, cluster.cores),
        "overhead": 0.0,
        "compute": 0.0,
        "transfer": 0.0 if math.isinf(cluster.bandwidth) else moved / cluster.bandwidth,
    }


def cluster_cores(calibration, cluster):
    """Worker threads of the calibration run's cluster (the target's when there is none)."""
    if calibration is not None and getattr(calibration.cluster, "cores", None):
        return int(calibration.cluster.cores)
    return int(cluster.cores)


def solver_rounds(report):
    """The records of ``report`` the model prices: all but the set-up rounds."""
    return [r for r in report.records if r.kind not in SETUP_KINDS]


def measured_seconds(report):
    """Seconds the solver's rounds took (the set-up rounds left out, as in :func:`predict`)."""
    return sum(r.seconds for r in solver_rounds(report))


def predict(report, cluster, calibration, *, here=False):
    """Predicted seconds of a fit's solver rounds on ``cluster``, by term and in total.

    The set-up rounds (:data:`SETUP_KINDS`) are left out: every fit runs the same one.

    Parameters
    ----------
    report : CommReport
    cluster : Cluster
    calibration : Calibration
    here : bool
        Price the rounds with their own partitions on the calibration run's cluster.

    Returns
    -------
    dict
        ``latency``, ``overhead``, ``compute``, ``transfer`` and ``total`` seconds.
    """
    totals = dict.fromkeys(("latency", "overhead", "compute", "transfer"), 0.0)
    for record in solver_rounds(report):
        for term, seconds in round_seconds(record, cluster, calibration, here=here).items():
            totals[term] += seconds
    totals["total"] = sum(totals.values())
    return totals

