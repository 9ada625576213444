"""Measurement of rounds: wall and compute time in process, Dask's own counters on a cluster.

A probe measures one round while it runs; on a cluster a scheduler plugin
(:class:`RoundsPlugin`) and the workers' transfer logs give the bytes each round really
moved, fetched in batches by :class:`DaskMeter` and once more when a fit ends, so that
the ledger (:mod:`daskglm.accounting.ledger`) stays a pure record.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from typing import Any

from ..accounting.bytemodel import control_bytes, holders_control_bytes
from ..accounting.round_record import kept_local, round_timing

try:  # the scheduler plugin needs distributed's base class
    from distributed.diagnostics.plugin import SchedulerPlugin as _SchedulerPlugin
except ImportError:  # pragma: no cover - distributed is a dependency
    _SchedulerPlugin = object  # type: ignore[misc,assignment]

__all__ = ["Timer", "LocalProbe", "DaskMeter", "RoundsPlugin", "COLLECT_EVERY_TASKS",
           "tree_partials"]


#: Measurements of pending rounds are fetched from the cluster once this many tasks have
#: run since the last fetch (the workers keep only their last 1000 transfers).
COLLECT_EVERY_TASKS = 400

#: Prefix of the keys of every task the engine submits; combine tasks use ``SUM_PREFIX``.
KEY_PREFIX = "daskglm_"
SUM_PREFIX = KEY_PREFIX + "sum"
#: Keys of the tasks that make a round's partition holders (:mod:`daskglm.engine.direct`):
#: measured with the round, not timed as its partition tasks.
HOLDER_PREFIX = KEY_PREFIX + "holders"
#: How the ledger describes the measurement of direct rounds (:mod:`daskglm.engine.direct`).
DIRECT_MEASUREMENT = "; direct rounds: their calls and answers, as pickled by daskglm"
#: Keys of the small tasks of a stateful round that split a group's output on its worker
#: (timed with the combine tasks, not as partition tasks).
PICK_PREFIX = SUM_PREFIX + "_pick"


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
        #: the round's tasks when they were not the engine's groups (never, in process)
        self.groups = None
        #: a tree round's partial sums when its tasks did not return one each (never)
        self.partials = self.gathered = None

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
        for name, value in round_timing(self.spans).items():
            setattr(record, name, value)
        report.engine, report.workers, report.cores = "local", 1, self.threads
        report.measurement = self.measurement


# distributed rounds --------------------------------------------------------------------
def tree_partials(probe, tasks):
    """``(partials, gathered)`` of a tree round of ``tasks`` tasks: what ``probe`` was
    told by the backend, else one partial a task and ``gathered`` left to the model (0)."""
    return (probe.partials or tasks), (probe.gathered or 0)


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
        if entry is None or key.startswith(HOLDER_PREFIX):  # holders: not the round's work
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
        self.kind = kind
        #: set by the backend when a tree round summed its partials otherwise
        #: (:mod:`daskglm.engine.topologies`)
        self.topology = None
        #: set by the backend when the round ran on the partition holders
        #: (:class:`~daskglm.engine.direct.DirectMeasurement`), measured as it ran
        self.direct = None
        #: partition holders the round started making (:meth:`holder_keys`)
        self.holders = 0
        #: set by the backend when the round's tasks were not the engine's groups (the
        #: streamed runs of :mod:`daskglm.engine.streaming`): how many there were
        self.groups = None
        #: set by the backend when a tree round's tasks did not return one partial sum
        #: each: the sums they returned, and those of them the driver gathered
        self.partials = self.gathered = None

    def keys(self, n):
        """Keys for the round's ``n`` partition tasks."""
        return [f"{self.prefix}{i}" for i in range(n)]

    def holder_keys(self, n):
        """Keys for ``n`` partition holders made during the round (measured with it)."""
        return [f"{HOLDER_PREFIX}-{self.token}-{i}" for i in range(n)]

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
        report.engine = "distributed"
        report.workers = report.workers or self.meter.workers
        report.cores = report.cores or self.meter.cores
        record.bytes_overhead = control_bytes(record)
        if self.holders:
            record.holders = self.holders
            record.bytes_overhead += holders_control_bytes(self.holders, record.partitions)
        direct = self.direct is not None or DIRECT_MEASUREMENT in (report.measurement or "")
        report.measurement = self.meter.description + (DIRECT_MEASUREMENT if direct else "")
        if self.direct is not None:
            self.direct.fill(record)
            return
        record.route = "tasks"
        if self.topology is not None:
            _mark_topology(record, self.topology, self.meter.workers)
        if record.topology in (None, "tree"):
            record.bytes_kept_local = kept_local(record, self.meter.workers)
        record.bytes_submitted = self.submitted
        self.meter.add(record, self.token, report)


def _mark_topology(record, topology, workers):
    """Write a server's or a ring's returned and kept-local bytes into a tree round's record.

    The engine counted ``tasks`` results of one size, as a tree moves them; a server and a
    ring move what :func:`~daskglm.engine.topologies.returned_bytes` says.  On a server,
    the partials of the groups on its own worker (``G / W`` of them) stay there; on a
    ring every group's partial is cut where it was made and only chunks move.
    """
    from .topologies import returned_bytes

    result = record.bytes_returned / max(1, record.tasks)
    groups = max(1, record.groups)
    record.topology = topology
    record.partials = record.gathered = 0  # a tree's counts: a server and a ring differ
    record.bytes_returned = int(round(returned_bytes(topology, result, groups)))
    record.bytes_kept_local = (int(round(groups * result / max(1, workers or 1)))
                               if topology == "server" else 0)


def _interval_ends(starts, now):
    """Where each round's share of the scheduler's stream bytes ends: at the next round's
    start in the order the scheduler saw them (stream bytes only grow, so that is the
    order of the snapshots, whatever the order the rounds were recorded in), or ``now``.
    None for a round not seen."""
    seen = sorted((start, i) for i, start in enumerate(starts) if start is not None)
    ends = [None] * len(starts)
    for (_, i), following in zip(seen, seen[1:] + [(now, None)]):
        ends[i] = following[0]
    return ends


class DaskMeter:
    """Measures the rounds a ``distributed.Client`` runs from Dask's own counters.

    One meter per client (:meth:`for_client`); it registers :class:`RoundsPlugin` on the
    scheduler once and keeps the rounds whose measurements have not been fetched yet.
    """

    _meters: weakref.WeakKeyDictionary[Any, DaskMeter] = weakref.WeakKeyDictionary()
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
        starts = [rounds.get(token, {}).get("snapshot") for token in tokens]
        ends = _interval_ends(starts, scheduler["now"] if scheduler else None)
        for i, (record, token, report) in enumerate(pending):
            if self.cores:
                report.cores, report.workers = self.cores, self.workers
            start, end = starts[i], ends[i]
            record.bytes_dispatched = (
                max(0, end - start) if start is not None and end is not None else None
            )
            (record.bytes_transferred, record.transfers,
             record.seconds_transferring) = transferred.get(token, (0, 0, 0.0))
            parts = (record.bytes_submitted, record.bytes_dispatched, record.bytes_transferred)
            record.bytes_measured = sum(p for p in parts if p is not None)
            spans = rounds.get(token, {}).get("tasks")
            if spans:
                for name, value in round_timing(spans).items():
                    setattr(record, name, value)
