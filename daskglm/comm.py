"""Communication accounting: one record per engine round, modelled and measured.

Only the engine writes here.  A *round* is one map over the partitions followed either by
the fixed-order tree reduction (``reduce``, ``reduce_each``) or by a gather of one result
per partition (``map``, ``map_each``).  Every round appends a :class:`RoundRecord` to the
fit's :class:`CommReport` (exposed by the estimators as ``comm_``) holding

* what the round moves according to the **model**: the payload sent to the workers, the
  payload returned, and Dask's per-task control traffic;
* what Dask's own counters say it **measured** (distributed engine only);
* its wall time, the compute time of its tasks, and the time worker threads spent
  waiting for the slowest partition (the synchronisation cost).

Model
-----
``P`` partitions, ``G`` the tasks they run in (a round runs all the partitions one
worker thread holds in one task, so ``G`` is the number of worker threads on a cluster
and ``P`` in this process), ``d`` parameters (features, plus one for the intercept), ``p``
features, ``k`` the fan-in of the reduction tree (``split_every``), ``T`` tasks: ``G``
plus the ``ceil(G / k) + ceil(G / k^2) + ... + 1`` combine tasks of a tree round, ``G``
for a gather round.  Payload is 8 bytes per float; scalars (the intercept flag,
tolerances, counters) 8 bytes each; objects without numeric data (a family, a penalty) 0.
Down is the broadcast arguments times ``G`` (plus the per-partition items of ``*_each``
rounds, times ``P``); up is every task's result moving once: each partial to its combine
task, the root to the driver (a gather round returns one result per partition).  On a
cluster the model subtracts the partials expected to be combined on the worker that made
them (:func:`kept_local`) and adds Dask's per-task control traffic.

============  ==================  ==============================  ============================
kind          verb (method)       down (bytes)                    up (bytes)
============  ==================  ==============================  ============================
validate      reduce (every fit)  ``8 G``                         ``8 (2 p + 4) T``
gradient      reduce (gd, lbfgs,  ``8 (d + 1) G``                 ``8 (d + 2) T``
              proximal, newton)
hessian       reduce (newton,     ``8 (d + 1) G``                 ``8 (d^2 + d + 2) T``
              averaging+newton)
gram          reduce (normal)     ``0``                           ``8 (p^2 + 2 p + 3) T``
local_solve   map (averaging)     ``8 (d + 3) G``                 ``8 (d + 4) P`` (once)
local_solve   map_each (admm)     ``16 d P + 8 (d + 2 p + 5) G``  ``8 (2 d + 4) P`` per iteration
sizes         map (sgd)           ``0``                           ``16 P``
encode        (classifiers whose  ``8 P``                         ``0``
              labels are not 0/1)
maxima        reduce (columns of  ``0``                           ``8 p T``
              extreme scale)
scale         (the same, no       ``8 p P``                       ``0``
              penalty)
sgd_batch     reduce_each (sgd)   ``8 s P + 8 (d + s) G``         ``8 (d + 2) T``
local_sgd     reduce_each (sgd)   ``8 s P + 8 (d + s) G``         ``8 (d + s') T``
overhead      every round         both ways: ``TASK_BYTES T + REF_BYTES (P - G)``, plus
                                  ``RESULT_BYTES (P - G)`` for a gather round (0 in-process)
============  ==================  ==============================  ============================

Rounds of the other verbs are counted the same way, from the objects that move:

* a stateful round (``reduce_stateful``, ``map_stateful``) counts what a ``reduce`` or a
  ``map`` with the same arguments counts: the states stay on the workers, neither sent nor
  returned.  Its tasks add, to the ``G`` group tasks and the combine tasks, ``G + P``
  small tasks that split each group's output on its worker (results, one state per
  partition); ``state_reset`` lists the partitions whose state was lost and restarted;
* ``fetch_state`` returns the states (one task per state held), ``put_state`` sends them;
* a deadline round (``reduce_by_deadline``) runs ``P`` tasks (``groups = P``), sends the
  arguments ``P`` times and returns the results that arrived, each to the driver (the
  restricted tree is summed there: ``split_every`` is None); ``dropped`` lists the
  partitions left out.  Its first call on an engine runs a ``weights`` round (``map``,
  one float per partition) once;
* a ``map_as_completed`` round is counted like a deadline round when its iteration ends:
  ``P`` tasks, the arguments ``P`` times, the results yielded; ``dropped`` lists the
  partitions not yielded (lost with a worker, or not consumed);
* a parameter holder's traffic is written when it is closed, as one ``push`` record (tasks
  = pushes, sent = the deltas, ``staleness`` = the histogram) and one ``pull`` record
  (tasks = pulls, returned = the parameters); ``seconds`` 0 and nothing measured: the
  calls go worker to worker, inside other rounds' tasks.

``s`` and ``s'`` are the few scalars and step-rule state a stochastic step carries;
ADMM's ``2 p`` is its standardising transform (column means and scales), 0 without it.
The validation round returns the column sums and sums of squares of ``X`` with its row
count, weight and size, so the solvers that standardise (``admm``, ``proximal``) need no
round of their own for them.
The engine does not use the table: it counts the bytes of the objects it actually sends
and receives (:func:`nbytes`), which is what the table summarises; ``tests/test_comm.py``
checks the two agree.

Dask adds control traffic to every task: the task's key (about 50 characters, repeated in
several messages), the reference to the function, the submission to the scheduler, the
``compute-task`` message to the worker, the scheduler's notices to the client, and a
message header on every transfer.  For small payloads this dominates, so the model
includes it explicitly as :data:`TASK_BYTES` per task, a constant measured on
``distributed`` 2026.8 (1.8 to 2.3 kB per task); see ``docs/costs.md``.

Measurement
-----------
:class:`LocalEngine` rounds move nothing between processes: their measured bytes are 0.
For :class:`DistributedEngine` rounds the measured bytes are the sum of three of Dask's own
counters, each attributed to the round by the keys of its tasks (``daskglm_<kind>-<token>-i``
and ``daskglm_sum-<token>-i``):

``bytes_submitted``
    Bytes the client wrote to the scheduler while the round ran (graph submission), from
    the client's batched stream counter, read before and after the round (free).
``bytes_dispatched``
    Bytes the scheduler wrote on its streams to the workers and clients (``compute-task``
    messages carrying the broadcast arguments, notices of finished keys), snapshotted by a
    small scheduler plugin (:class:`RoundsPlugin`) when the round's first graph arrives;
    a round's share is the difference to the next round's snapshot.
``bytes_transferred``
    Bytes the workers wrote answering data requests for the round's keys (partials moving
    to their combine task, results gathered for the driver), from the workers'
    ``transfer_outgoing_log``.

Not counted: the workers' status messages to the scheduler, heartbeats, and the
scheduler's relay of gathered results to the client (a second hop of bytes already
counted once when they left their worker).

Per-task compute times are recorded by the same scheduler plugin from the
``task-finished`` messages workers already send; a task's end is placed at the moment
the scheduler receives that message, so that the tasks of all workers share one clock
(workers stamp their own times with an estimate of their offset to the scheduler's clock
that can be off by more than the waits measured).  The plugin's snapshots and timings,
and the workers' transfer logs, are fetched in one call to the scheduler and one to the
workers when the engine closes (and every :data:`COLLECT_EVERY_TASKS` tasks during long
fits, before the workers' bounded logs wrap), so that the per-round cost of measurement
is reading one local counter.  Until then a distributed record's measured fields are
None.

Synchronisation cost
--------------------
For one round, let ``end`` be the time the last partition task finished.  Every worker
thread that ran partition tasks of the round waits from the end of its last one until
``end``: ``seconds_waiting`` is the sum of these idle times over threads (thread-seconds
lost to the slowest partition).  It is 0 when every thread finishes at the same time.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

try:  # the scheduler plugin needs distributed's base class
    from distributed.diagnostics.plugin import SchedulerPlugin as _SchedulerPlugin
except ImportError:  # pragma: no cover - distributed is a dependency
    _SchedulerPlugin = object

__all__ = [
    "Kind",
    "RoundRecord",
    "CommReport",
    "nbytes",
    "Timer",
    "LocalProbe",
    "DaskMeter",
    "RoundsPlugin",
    "TASK_BYTES",
    "REF_BYTES",
    "RESULT_BYTES",
    "control_bytes",
    "COLLECT_EVERY_TASKS",
    "payload_model",
    "kept_local",
    "tree_tasks",
    "tree_depth",
]


class Kind:
    """The kinds of rounds, as the ledger records them (see the table above)."""

    VALIDATE = "validate"
    MAXIMA = "maxima"  # largest |value| per column, only for columns of extreme scale
    SCALE = "scale"  # those columns multiplied by powers of two where they live
    ENCODE = "encode"  # class labels encoded as 0/1 where they live
    GRADIENT = "gradient"
    HESSIAN = "hessian"
    GRAM = "gram"
    LOCAL_SOLVE = "local_solve"
    SIZES = "sizes"
    SGD_BATCH = "sgd_batch"
    LOCAL_SGD = "local_sgd"
    PUSH = "push"  # updates pushed to a parameter holder (one record when it is closed)
    PULL = "pull"  # parameters pulled from a parameter holder (the same)

#: Dask's control traffic per task, in bytes, counted as part of the modelled bytes of
#: distributed rounds (see the module docstring and docs/costs.md).
TASK_BYTES = 1900

#: Control traffic of every partition a task references beyond its first (a grouped task
#: names each of its partitions' keys in several messages), and of every result beyond the
#: first that a gathered task returns (each is pickled with its own header); measured on
#: ``distributed`` 2026.x at 330-670 and 550-700 bytes.
REF_BYTES = 450
RESULT_BYTES = 600


def control_bytes(record):
    """Modelled Dask control traffic of a distributed round (see :data:`TASK_BYTES`)."""
    extra = max(0, record.partitions - record.groups)
    per_extra = REF_BYTES + (RESULT_BYTES if record.split_every is None else 0)
    return TASK_BYTES * record.tasks + per_extra * extra


#: Measurements of pending rounds are fetched from the cluster once this many tasks have
#: run since the last fetch (the workers keep only their last 1000 transfers).
COLLECT_EVERY_TASKS = 400

#: Prefix of the keys of every task the engine submits; combine tasks use ``SUM_PREFIX``.
KEY_PREFIX = "daskglm_"
SUM_PREFIX = KEY_PREFIX + "sum"
#: Keys of the small tasks of a stateful round that split a group's output on its worker
#: (timed with the combine tasks, not as partition tasks).
PICK_PREFIX = SUM_PREFIX + "_pick"


def nbytes(obj) -> int:
    """Payload bytes of ``obj``: arrays of any library (numpy, CuPy, ...), sparse matrices
    (scipy, pydata ``sparse``, ``cupyx``), numbers, and containers or dataclasses of them."""
    if obj is None:
        return 0
    if isinstance(obj, (int, float, np.number, bool)):
        return 8
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(item) for item in obj)
    if isinstance(obj, dict):
        return sum(nbytes(item) for item in obj.values())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if hasattr(obj, "indptr") or hasattr(obj, "coords"):  # sparse: its stored arrays
        return sum(_array_bytes(getattr(obj, name, None))
                   for name in ("data", "indices", "indptr", "coords"))
    return _array_bytes(obj)


def _array_bytes(array):
    """``array.nbytes`` for anything array-like (``shape`` and ``nbytes``), else 0."""
    if hasattr(array, "shape") and hasattr(array, "nbytes"):
        return int(array.nbytes)
    return 0


def tree_tasks(partitions, split_every):
    """Combine tasks of a fixed-order tree of fan-in ``split_every`` over ``partitions``."""
    tasks, n = 0, int(partitions)
    while n > 1:
        n = -(-n // split_every)
        tasks += n
    return tasks


def tree_depth(partitions, split_every):
    """Levels of combine tasks above the partitions."""
    depth, n = 0, int(partitions)
    while n > 1:
        n = -(-n // split_every)
        depth += 1
    return depth


def payload_model(kind, *, n_params, partitions, split_every=8, n_features=None, groups=None):
    """Modelled payload ``(down, up)`` in bytes of one round of ``kind`` (the table above).

    Parameters
    ----------
    kind : str
        One of ``"validate"``, ``"gradient"``, ``"hessian"``, ``"gram"``,
        ``"averaging"`` (the local solves of divide-and-conquer averaging), ``"admm"``
        (one ADMM iteration's local solves), ``"sizes"``.
    n_params : int
        Parameters ``d``: features, plus one when an intercept is fitted.
    partitions : int
    split_every : int
        Fan-in of the reduction tree.
    n_features : int, optional
        Features ``p`` (for ``"validate"``, ``"gram"`` and ``"admm"``, which
        standardises the columns by default); ``n_params`` by default.
    groups : int, optional
        Tasks ``G`` the partitions run in (one per worker thread on a cluster);
        ``partitions`` by default.

    Returns
    -------
    tuple of int
        Bytes down (to the partitions) and up (partials and results).
    """
    d, P = int(n_params), int(partitions)
    G = P if groups is None else int(groups)
    p = d if n_features is None else int(n_features)
    T = G + tree_tasks(G, split_every)
    table = {
        Kind.VALIDATE: (8 * G, 8 * (2 * p + 4) * T),
        Kind.GRADIENT: (8 * (d + 1) * G, 8 * (d + 2) * T),
        Kind.HESSIAN: (8 * (d + 1) * G, 8 * (d * d + d + 2) * T),
        Kind.GRAM: (0, 8 * (p * p + 2 * p + 3) * T),
        "averaging": (8 * (d + 3) * G, 8 * (d + 4) * P),
        "admm": (8 * 2 * d * P + 8 * (d + 2 * p + 5) * G, 8 * (2 * d + 4) * P),
        Kind.SIZES: (0, 16 * P),
        Kind.ENCODE: (8 * P, 0),
        Kind.MAXIMA: (0, 8 * p * T),
        Kind.SCALE: (8 * p * P, 0),
    }
    if kind not in table:
        raise ValueError(f"No payload model for round kind {kind!r}; known: {sorted(table)}.")
    return table[kind]


@dataclass
class RoundRecord:
    """One engine round.

    Attributes
    ----------
    kind : str
        What the round computed: ``"validate"``, ``"gradient"``, ``"gram"``, ``"hessian"``...
    tasks : int
        Tasks run: one per partition plus the tree's combine tasks.
    bytes_sent : int
        Modelled payload sent to the workers (broadcast arguments times partitions, plus
        per-partition items).
    bytes_returned : int
        Modelled payload of the partial results moved up the tree and back to the driver.
    seconds : float
        Wall time of the round, as seen by the driver.
    partitions : int
        Partitions the round mapped over.
    groups : int
        Tasks the partitions ran in: one per worker thread on a cluster (all the
        partitions a thread holds, in one task), one per partition in this process.
    split_every : int or None
        Fan-in of the reduction tree; None for a gather round (``map``).
    bytes_overhead : int
        Modelled control traffic Dask adds: ``TASK_BYTES`` per task on a cluster, 0 in
        this process.
    bytes_kept_local : int
        Modelled payload of partials combined on the worker that computed them, so never
        sent (:func:`kept_local`); 0 in this process, where the model counts every
        partial as a worker on its own would.
    bytes_measured : int or None
        Bytes measured from Dask's counters: the sum of the three below.  0 in this
        process; None until measured.
    bytes_submitted, bytes_dispatched, bytes_transferred : int or None
        Client to scheduler; scheduler streams to workers and clients; workers' answers to
        data requests (see the module docstring).
    bytes_read : int
        Bytes read from storage by the round (counted apart from network traffic).
    seconds_compute : float or None
        Sum over the round's tasks of their compute time.
    seconds_waiting : float or None
        Thread-seconds worker threads spent idle waiting for the round's slowest
        partition (see the module docstring).
    seconds_span : float or None
        From the start of the round's first partition task to the end of its last one.
    seconds_tree : float or None
        From the end of the last partition task to the end of the tree's root task: the
        time the reduction tree added (distributed tree rounds only).
    transfers : int or None
        Data requests the workers answered for the round (0 in this process).
    seconds_transferring : float or None
        Their summed durations, from the workers' transfer logs: sending the data and
        receiving the acknowledgement, so a round trip each.
    dropped : tuple of int or None
        Deadline rounds (``reduce_by_deadline``): the partitions whose result did not
        arrive in time and was left out of the sum; None for other rounds.
    state_reset : tuple of int or None
        Stateful rounds (``reduce_stateful``, ``map_stateful``): the partitions whose
        state was lost with a worker and started again from None; None for other rounds.
    staleness : dict or None
        ``push`` records of a parameter holder: ``{staleness: pushes}``, staleness being
        the versions applied between a pusher's pull and its push; None for other rounds.
    """

    kind: str
    tasks: int
    bytes_sent: int
    bytes_returned: int
    seconds: float
    partitions: int = 0
    split_every: int | None = None
    bytes_overhead: int = 0
    bytes_kept_local: int = 0
    bytes_measured: int | None = None
    bytes_submitted: int | None = None
    bytes_dispatched: int | None = None
    bytes_transferred: int | None = None
    bytes_read: int = 0
    seconds_compute: float | None = None
    seconds_waiting: float | None = None
    seconds_span: float | None = None
    seconds_tree: float | None = None
    transfers: int | None = None
    seconds_transferring: float | None = None
    groups: int = 0
    dropped: tuple | None = None
    state_reset: tuple | None = None
    staleness: dict | None = None

    @property
    def bytes_modelled(self) -> int:
        """Modelled network bytes: payload both ways, less the partials expected to be
        combined on the worker that made them, plus Dask's per-task control traffic."""
        return self.bytes_sent + self.bytes_returned - self.bytes_kept_local + self.bytes_overhead

    @property
    def depth(self) -> int:
        """Levels of the reduction tree (0 for a gather round)."""
        tasks = self.groups or self.partitions
        return 0 if self.split_every is None else tree_depth(tasks, self.split_every)

    def to_dict(self):
        """The record's fields and ``bytes_modelled`` as a plain dict."""
        return {**dataclasses.asdict(self), "bytes_modelled": self.bytes_modelled}


def kept_local(record, workers):
    """Modelled bytes of a tree round's partials that never leave their worker.

    With the partitions spread evenly over ``W`` workers, Dask runs each combine task on
    the worker holding most of its ``k`` inputs, so about ``1 / min(W, k)`` of every
    combine's inputs are already there.  Every partial but the root's feeds a combine:
    ``(T - 1) * r / min(W, k)`` bytes stay local, ``r`` being one task's result
    (``bytes_returned / T``).  Gather rounds send every result to the driver: 0.
    """
    if record.split_every is None or not workers or record.tasks <= 1:
        return 0
    result = record.bytes_returned / record.tasks
    return int(round((record.tasks - 1) * result / min(int(workers), record.split_every)))


def _timing(spans):
    """Compute, waiting, span and tree seconds of a round from its tasks' times.

    ``spans`` holds ``(is_partition, thread, start, stop)`` per task.

    Returns
    -------
    dict
        ``seconds_compute``, ``seconds_waiting``, ``seconds_span`` (first partition task's
        start to the last one's end) and ``seconds_tree`` (the last partition task's end
        to the last combine task's end; None without combine tasks).
    """
    compute = float(sum(stop - start for _, _, start, stop in spans))
    last, first, combined = {}, None, None
    for is_partition, thread, start, stop in spans:
        if is_partition:
            last[thread] = max(last.get(thread, stop), stop)
            first = start if first is None else min(first, start)
        else:
            combined = stop if combined is None else max(combined, stop)
    if not last:
        return {"seconds_compute": compute, "seconds_waiting": 0.0}
    end = max(last.values())
    return {
        "seconds_compute": compute,
        "seconds_waiting": float(sum(end - stop for stop in last.values())),
        "seconds_span": float(end - first),
        "seconds_tree": None if combined is None else max(0.0, float(combined - end)),
    }


class CommReport:
    """The rounds of one fit, in order, with totals and a table.

    Attributes
    ----------
    records : list of RoundRecord
    method : str or None
        The solver that ran, when set by the estimator.
    engine : str or None
        ``"local"`` (in this process, threads) or ``"distributed"``.
    workers : int or None
        Worker processes (1 in this process).
    cores : int or None
        Worker threads (in-process: pool threads) the rounds ran on.
    measurement : str
        Where the measured bytes come from.

    A pure record: nothing here contacts the cluster.  The engine fetches the measured
    fields of its rounds from Dask when the fit ends (``Engine.close``), so a report read
    (or printed, or pickled) later holds all it will ever hold.
    """

    def __init__(self):
        self.records: list[RoundRecord] = []
        self.method = None
        self.engine = None
        self.workers = None
        self.cores = None
        self.measurement = "none"

    # writing (engine side) ---------------------------------------------------------
    def record(self, kind, tasks, bytes_sent, bytes_returned, seconds, *, partitions=0,
               groups=None, split_every=None, probe=None):
        """Append one round; ``probe`` (from the engine) fills in the measured fields.

        Returns
        -------
        RoundRecord
        """
        rec = RoundRecord(kind, int(tasks), int(bytes_sent), int(bytes_returned), float(seconds),
                          int(partitions), split_every,
                          groups=int(partitions if groups is None else groups))
        self.records.append(rec)
        if probe is not None:
            probe.finish(rec, self)
        return rec

    # totals ------------------------------------------------------------------------
    @property
    def rounds(self) -> int:
        """Number of rounds."""
        return len(self.records)

    def count(self, kind) -> int:
        """Number of rounds of one kind."""
        return sum(1 for r in self.records if r.kind == kind)

    @property
    def tasks(self) -> int:
        """Tasks over all rounds."""
        return sum(r.tasks for r in self.records)

    @property
    def bytes_modelled(self) -> int:
        """Total modelled bytes: payload both ways plus Dask's per-task overhead."""
        return sum(r.bytes_modelled for r in self.records)

    @property
    def bytes_measured(self) -> int | None:
        """Total measured bytes of the rounds that were measured; None when none was."""
        known = [r.bytes_measured for r in self.records if r.bytes_measured is not None]
        return sum(known) if known else None

    @property
    def bytes_read(self) -> int:
        """Bytes read from storage, apart from network traffic."""
        return sum(r.bytes_read for r in self.records)

    @property
    def seconds(self) -> float:
        """Total wall time spent in rounds."""
        return sum(r.seconds for r in self.records)

    @property
    def seconds_compute(self) -> float:
        """Total compute time of the rounds' tasks (thread-seconds)."""
        return float(sum(r.seconds_compute or 0.0 for r in self.records))

    @property
    def seconds_waiting(self) -> float:
        """Total thread-seconds spent waiting for the slowest partition."""
        return float(sum(r.seconds_waiting or 0.0 for r in self.records))

    @property
    def split_every(self):
        """The fan-in of the reduction trees used (None when no round was a tree)."""
        values = {r.split_every for r in self.records if r.split_every is not None}
        return values.pop() if len(values) == 1 else (sorted(values) or None)

    def by_kind(self):
        """Per-kind totals: ``{kind: {"rounds", "tasks", "bytes_modelled", ...}}``."""
        kinds = {}
        for r in self.records:
            row = kinds.setdefault(r.kind, dict.fromkeys(
                ("rounds", "tasks", "bytes_modelled", "bytes_measured", "seconds",
                 "seconds_waiting"), 0))
            row["rounds"] += 1
            row["tasks"] += r.tasks
            row["bytes_modelled"] += r.bytes_modelled
            if r.bytes_measured is None or row["bytes_measured"] is None:
                row["bytes_measured"] = None
            else:
                row["bytes_measured"] += r.bytes_measured
            row["seconds"] += r.seconds
            row["seconds_waiting"] += r.seconds_waiting or 0.0
        return kinds

    # output ------------------------------------------------------------------------
    def to_dict(self):
        """Totals and the per-round records as plain Python objects."""
        return {
            "method": self.method,
            "engine": self.engine,
            "workers": self.workers,
            "cores": self.cores,
            "measurement": self.measurement,
            "rounds": self.rounds,
            "tasks": self.tasks,
            "bytes_modelled": self.bytes_modelled,
            "bytes_measured": self.bytes_measured,
            "bytes_read": self.bytes_read,
            "seconds": self.seconds,
            "seconds_compute": self.seconds_compute,
            "seconds_waiting": self.seconds_waiting,
            "split_every": self.split_every,
            "records": [r.to_dict() for r in self.records],
        }

    def to_frame(self):
        """The records as a pandas DataFrame, one row per round (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("CommReport.to_frame needs pandas: pip install pandas") from exc
        columns = [f.name for f in dataclasses.fields(RoundRecord)] + ["bytes_modelled"]
        return pd.DataFrame([r.to_dict() for r in self.records], columns=columns)

    def __repr__(self):
        kinds = self.by_kind()
        header = (f"{'kind':<12}{'rounds':>8}{'tasks':>8}{'modelled B':>14}{'measured B':>14}"
                  f"{'seconds':>10}{'waiting s':>11}")
        where = self.engine or "no"
        cores = f", {self.cores} threads" if self.cores else ""
        title = f"CommReport: {self.rounds} rounds on the {where} engine{cores}"
        if self.method:
            title += f", method {self.method!r}"

        def line(name, row):
            measured = "-" if row["bytes_measured"] is None else f"{row['bytes_measured']:,}"
            return (f"{name:<12}{row['rounds']:>8}{row['tasks']:>8}{row['bytes_modelled']:>14,}"
                    f"{measured:>14}{row['seconds']:>10.3f}{row['seconds_waiting']:>11.3f}")

        total = {key: sum(row[key] for row in kinds.values())
                 for key in ("rounds", "tasks", "bytes_modelled", "seconds", "seconds_waiting")}
        measured = [row["bytes_measured"] for row in kinds.values()]
        total["bytes_measured"] = None if None in measured else sum(measured)
        lines = [title, header, *(line(kind, row) for kind, row in kinds.items()),
                 line("total", total)]
        lines.append(f"measured: {self.measurement}; read from storage: {self.bytes_read:,} B")
        return "\n".join(lines)




class Timer:
    """Wall-clock stopwatch for a round."""

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


# in-process rounds ---------------------------------------------------------------------
class LocalProbe:
    """Times the partition calls of one in-process round (nothing crosses a process).

    Parameters
    ----------
    threads : int
        Threads of the engine's pool.
    """

    measurement = "0 B: in-process rounds cross no process boundary"

    def __init__(self, threads):
        self.threads = int(threads)
        self.spans = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def timed(self, fn):
        """``fn`` wrapped to record its thread and start and stop times."""
        spans = self.spans

        def call(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spans.append((True, threading.get_ident(), start, time.perf_counter()))

        return call

    def finish(self, record, report):
        record.bytes_measured = record.bytes_submitted = 0
        record.bytes_dispatched = record.bytes_transferred = record.transfers = 0
        record.seconds_transferring = 0.0
        for name, value in _timing(self.spans).items():
            setattr(record, name, value)
        report.engine, report.workers, report.cores = "local", 1, self.threads
        report.measurement = self.measurement


# distributed rounds --------------------------------------------------------------------
def _round_token(key):
    """The round token of a key the engine named, else None."""
    if type(key) is str and key.startswith(KEY_PREFIX):
        parts = key.split("-", 2)
        if len(parts) == 3:
            return parts[1]
    return None


def _stream_bytes(scheduler):
    """Bytes the scheduler has written on its batched streams to workers and clients."""
    total = 0
    for streams in (scheduler.stream_comms, scheduler.client_comms):
        for stream in list(streams.values()):
            total += getattr(stream, "byte_count", 0)
    return total


class RoundsPlugin(_SchedulerPlugin):
    """Scheduler plugin: per engine round, a snapshot of the scheduler's stream bytes
    when the round's first graph arrives, and the compute times of its tasks (ending when
    the scheduler hears of them, on its own clock).

    Only keys the engine named (``daskglm_...``) are looked at; the state is bounded.
    """

    name = "daskglm-rounds"
    idempotent = True
    #: Rounds kept; older ones are dropped unclaimed.
    max_rounds = 20_000

    def __init__(self):
        self.rounds = OrderedDict()

    def update_graph(self, scheduler, *, keys, **kwargs):
        for key in itertools.islice(keys, 4):
            token = _round_token(key)
            if token is not None:
                if token not in self.rounds:
                    self.rounds[token] = {"snapshot": _stream_bytes(scheduler), "tasks": []}
                    while len(self.rounds) > self.max_rounds:
                        self.rounds.popitem(last=False)
                return

    def transition(self, key, start, finish, *args, stimulus_id=None, **kwargs):
        if start != "processing" or finish != "memory":
            return
        token = _round_token(key)
        entry = None if token is None else self.rounds.get(token)
        if entry is None:
            return
        # End times on the scheduler's clock, when it hears of them: the workers' own
        # times are shifted onto it by an estimate that can be off by more than the
        # waits being measured.  Durations come from the worker's clock.
        received = time.time()
        is_partition = not key.startswith(SUM_PREFIX)
        thread = (kwargs.get("worker"), kwargs.get("thread"))
        for startstop in kwargs.get("startstops") or ():
            if startstop.get("action") == "compute":
                duration = startstop["stop"] - startstop["start"]
                entry["tasks"].append((is_partition, thread, received - duration, received))


def _collect_on_scheduler(tokens, dask_scheduler=None):
    """Run on the scheduler: pop the plugin's entries for ``tokens``; add a snapshot now."""
    plugin = dask_scheduler.plugins.get(RoundsPlugin.name)
    rounds = {}
    if plugin is not None:
        for token in tokens:
            entry = plugin.rounds.pop(token, None)
            if entry is not None:
                rounds[token] = entry
    cores = sum(ws.nthreads for ws in dask_scheduler.workers.values())
    return {"now": _stream_bytes(dask_scheduler), "rounds": rounds, "cores": cores,
            "workers": len(dask_scheduler.workers)}


def _collect_on_worker(tokens, dask_worker=None):
    """Run on a worker: ``{token: [bytes, transfers, seconds]}`` of the data requests it
    answered for each round in ``tokens`` (bytes as written on the wire)."""
    wanted = set(tokens)
    sent = {}
    for entry in list(dask_worker.transfer_outgoing_log):
        for key in entry.get("keys", ()):
            token = _round_token(key)
            if token in wanted:
                row = sent.setdefault(token, [0, 0, 0.0])
                row[0] += int(entry.get("compressed") or 0)
                row[1] += 1
                row[2] += float(entry.get("duration") or 0.0)
                break
    return sent


class _DaskProbe:
    """One distributed round: names its tasks and counts the client's submitted bytes."""

    def __init__(self, meter, kind):
        self.meter = meter
        safe = "".join(c if c.isalnum() else "_" for c in str(kind)) or "round"
        self.token = uuid.uuid4().hex
        self.prefix = f"{KEY_PREFIX}{safe}-{self.token}-"
        self._combine = itertools.count()
        self.submitted = None

    def keys(self, n):
        """Keys for the round's ``n`` partition tasks."""
        return [f"{self.prefix}{i}" for i in range(n)]

    def combine_key(self):
        """A key for one more combine task of the round's tree."""
        return f"{SUM_PREFIX}-{self.token}-{next(self._combine)}"

    def pick_key(self, label):
        """A key for a task that picks part of a stateful group task's output."""
        return f"{PICK_PREFIX}-{self.token}-{label}"

    def __enter__(self):
        self._start = self.meter.client_bytes()
        return self

    def __exit__(self, *exc):
        self.submitted = self.meter.client_bytes() - self._start
        return None

    def finish(self, record, report):
        record.bytes_overhead = control_bytes(record)
        record.bytes_kept_local = kept_local(record, self.meter.workers)
        record.bytes_submitted = self.submitted
        report.engine = "distributed"
        report.workers = report.workers or self.meter.workers
        report.cores = report.cores or self.meter.cores
        report.measurement = self.meter.description
        self.meter.add(record, self.token, report)


class DaskMeter:
    """Measures the rounds a ``distributed.Client`` runs from Dask's own counters.

    One meter per client (:meth:`for_client`); it registers :class:`RoundsPlugin` on the
    scheduler once and keeps the rounds whose measurements have not been fetched yet.
    """

    _meters = weakref.WeakKeyDictionary()
    _lock = threading.Lock()

    def __init__(self, client):
        self._client = weakref.ref(client)
        self.cores = self.workers = None
        self._pending_lock = threading.Lock()
        self.pending = []
        self.pending_tasks = 0
        try:
            client.register_plugin(RoundsPlugin(), name=RoundsPlugin.name)
            self.scheduler_plugin = True
            self.description = ("client submissions + scheduler streams + worker transfers "
                                "(Dask counters)")
        except Exception as exc:  # e.g. daskglm not installed where the scheduler runs
            self.scheduler_plugin = False
            self.description = (f"client submissions + worker transfers (Dask counters); "
                                f"scheduler streams not measured: {type(exc).__name__}")
        try:
            nthreads = client.nthreads()
            self.workers, self.cores = len(nthreads), sum(nthreads.values())
        except Exception:  # pragma: no cover - a client that cannot reach its scheduler
            pass

    @classmethod
    def for_client(cls, client):
        """The meter of ``client``, created on first use."""
        with cls._lock:
            meter = cls._meters.get(client)
            if meter is None:
                meter = cls._meters[client] = cls(client)
            return meter

    @property
    def client(self):
        return self._client()

    def client_bytes(self):
        """Bytes the client has written to the scheduler on its batched stream."""
        client = self.client
        stream = getattr(client, "scheduler_comm", None) if client is not None else None
        return int(getattr(stream, "byte_count", 0) or 0)

    def round(self, kind):
        """A context manager for one round of ``kind``; it names the round's keys."""
        return _DaskProbe(self, kind)

    def add(self, record, token, report):
        """Queue ``record`` for measurement; fetch when many tasks are pending."""
        with self._pending_lock:
            self.pending.append((record, token, report))
            self.pending_tasks += record.tasks
            due = self.pending_tasks >= COLLECT_EVERY_TASKS
        if due:
            self.collect()

    def collect(self):
        """Fetch the pending rounds' measurements: one call to the scheduler, one to the workers."""
        with self._pending_lock:
            pending, self.pending, self.pending_tasks = self.pending, [], 0
        client = self.client
        if not pending or client is None:
            return
        tokens = [token for _, token, _ in pending]
        scheduler = None
        if self.scheduler_plugin:
            scheduler = client.run_on_scheduler(_collect_on_scheduler, tokens)
            self.cores, self.workers = scheduler["cores"], scheduler["workers"]
        per_worker = client.run(_collect_on_worker, tokens)
        transferred = {}
        for sent in per_worker.values():
            for token, row in sent.items():
                total = transferred.setdefault(token, [0, 0, 0.0])
                for i, value in enumerate(row):
                    total[i] += value
        rounds = scheduler["rounds"] if scheduler else {}
        snapshots = [rounds.get(token, {}).get("snapshot") for token in tokens]
        snapshots.append(scheduler["now"] if scheduler else None)
        for i, (record, token, report) in enumerate(pending):
            if self.cores:
                report.cores, report.workers = self.cores, self.workers
            start, end = snapshots[i], snapshots[i + 1]
            if start is not None and end is None:  # next round not seen: use the next known
                end = next((s for s in snapshots[i + 2:] if s is not None), None)
            record.bytes_dispatched = (
                max(0, end - start) if start is not None and end is not None else None
            )
            (record.bytes_transferred, record.transfers,
             record.seconds_transferring) = transferred.get(token, (0, 0, 0.0))
            parts = (record.bytes_submitted, record.bytes_dispatched, record.bytes_transferred)
            record.bytes_measured = sum(p for p in parts if p is not None)
            spans = rounds.get(token, {}).get("tasks")
            if spans:
                for name, value in _timing(spans).items():
                    setattr(record, name, value)
