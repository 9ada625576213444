"""Communication accounting: one record per engine round, modelled and measured.

Only the engine writes here.  A *round* is one map over the partitions followed either by
the fixed-order tree reduction (``reduce``, ``reduce_each``) or by a gather of one result
per partition (``map``, ``map_each``).  Every round appends a :class:`~.round_record.RoundRecord` to the
fit's :class:`CommReport` (exposed by the estimators as ``comm_``) holding

* what the round moves according to the **model** (:mod:`daskglm.accounting.bytemodel`):
  the payload sent to the workers, the payload returned, and Dask's per-task control
  traffic;
* what Dask's own counters say it **measured** (distributed engine only), fetched by the
  engine (:mod:`daskglm.engine.measure`) when a fit ends: nothing here contacts a
  cluster, not even a property or a ``repr``;
* its wall time, the compute time of its tasks, and the time worker threads spent
  waiting for the slowest partition (the synchronisation cost).

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
import html
import textwrap

from .round_record import RoundRecord

__all__ = ["CommReport"]


def _merged(histograms):
    total = {}
    for histogram in histograms:
        for key, count in (histogram or {}).items():
            total[key] = total.get(key, 0) + count
    return dict(sorted(total.items()))


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
    choices : dict
        Options a solver chose from measurements during the fit (e.g. local SGD's steps
        per round): ``{option: (value, reason)}``.

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
        self.choices = {}

    @classmethod
    def concatenate(cls, reports):
        """One report holding the rounds of ``reports`` in order (fits run one after the
        other, e.g. one per class of one-vs-rest); the description is the first's."""
        reports = list(reports)
        merged = cls()
        for report in reports:
            merged.records.extend(report.records)
        if reports:
            first = reports[0]
            merged.method, merged.engine = first.method, first.engine
            merged.workers, merged.cores = first.workers, first.cores
            merged.measurement = first.measurement
            merged.choices = dict(first.choices)
        return merged

    # writing (engine side) ---------------------------------------------------------
    def note_choice(self, option, value, reason):
        """Record that ``option`` was set to ``value`` during the fit, and why."""
        self.choices[option] = (value, reason)

    def record(self, kind, tasks, bytes_sent, bytes_returned, seconds, *, partitions=0,
               groups=None, split_every=None, probe=None, partials=0, gathered=0):
        """Append one round; ``probe`` (from the engine) fills in the measured fields.
        ``partials`` and ``gathered`` are a tree round's (:class:`RoundRecord`).

        Returns
        -------
        RoundRecord
        """
        rec = RoundRecord(kind, int(tasks), int(bytes_sent), int(bytes_returned), float(seconds),
                          int(partitions), split_every,
                          groups=int(partitions if groups is None else groups),
                          partials=int(partials), gathered=int(gathered))
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
    def staleness(self) -> dict:
        """``{staleness: updates}`` over every parameter holder of the fit (versions
        applied between an update's read and its push); empty without a holder."""
        return _merged(r.staleness for r in self.records)

    @property
    def clock_staleness(self) -> dict:
        """``{clock lag: updates}`` of parameter-server SGD (see
        :attr:`RoundRecord.clock_staleness`); empty without one."""
        return _merged(r.clock_staleness for r in self.records)

    @property
    def seconds_blocked(self) -> float:
        """Seconds tasks waited at a staleness bound, summed over tasks."""
        return float(sum(r.seconds_blocked or 0.0 for r in self.records))

    @property
    def holders_lost(self) -> list:
        """The workers lost with a parameter holder, in order (see
        :attr:`RoundRecord.holder_lost`); empty when none was."""
        return [r.holder_lost for r in self.records if r.holder_lost is not None]

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
            "choices": {option: {"value": value, "reason": reason}
                        for option, (value, reason) in self.choices.items()},
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
        for note in self._notes():
            lines.extend(textwrap.wrap(note, width=len(header), subsequent_indent="  "))
        return "\n".join(lines)

    def _notes(self):
        """The sentences under the table: where the measured bytes come from, the bytes
        loaded from the input (when any), and the options chosen during the fit."""
        notes = [f"measured: {self.measurement}"]
        if self.bytes_read:
            notes.append(f"loaded from the input (its Dask graph computed, or its store "
                         f"read): {self.bytes_read:,} B")
        notes.extend(f"chosen: {option}={value!r}: {reason}"
                     for option, (value, reason) in self.choices.items())
        return notes

    def _repr_html_(self):
        """The same table as :meth:`__repr__`, as HTML for notebooks."""
        columns = ("kind", "rounds", "tasks", "modelled B", "measured B", "seconds",
                   "waiting s")
        rows = list(self.by_kind().items())
        if rows:
            total = {key: sum(row[key] for _, row in rows) for key in
                     ("rounds", "tasks", "bytes_modelled", "seconds", "seconds_waiting")}
            measured = [row["bytes_measured"] for _, row in rows]
            total["bytes_measured"] = None if None in measured else sum(measured)
            rows.append(("total", total))

        def cells(name, row):
            measured = "-" if row["bytes_measured"] is None else f"{row['bytes_measured']:,}"
            values = (name, row["rounds"], row["tasks"], f"{row['bytes_modelled']:,}",
                      measured, f"{row['seconds']:.3f}", f"{row['seconds_waiting']:.3f}")
            return "".join(f"<td>{html.escape(str(v))}</td>" for v in values)

        title = html.escape(self.__repr__().splitlines()[0])
        head = "".join(f"<th>{c}</th>" for c in columns)
        body = "".join(f"<tr>{cells(name, row)}</tr>" for name, row in rows)
        notes = "".join(f"<p>{html.escape(note)}</p>" for note in self._notes())
        return (f"<div><p><b>{title}</b></p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{notes}</div>")
