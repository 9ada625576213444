"""Whole-fit measurements that work for any library on a Dask cluster.

* :class:`DaskCounters` -- graphs submitted, tasks and bytes moved during one call, read
  from Dask's own counters before and after it: the client's batched stream to the
  scheduler, the scheduler's batched streams to the workers and clients, and the bytes
  the workers sent answering data requests (``transfer_outgoing_bytes_total``).  These
  are the counters daskglm's ledger attributes to its rounds
  (``est.comm_.bytes_measured``, see :mod:`daskglm.accounting.ledger`); here they are taken for the
  whole call, so they apply to dask-glm and dask-ml too.  A "round" of a library that
  is not daskglm is one graph submitted to the scheduler (one Dask computation).
* :class:`PeakMemory` -- the peak resident memory of each worker process (and of this
  process, for in-memory methods) during one call, from Linux's high-water mark
  ``VmHWM``, which is reset before the call by writing ``5`` to ``/proc/self/clear_refs``.
  Unlike sampling, this misses no short peak and costs nothing while the call runs.
  Where the kernel does not offer it, the peak is not reported.
"""

from __future__ import annotations

import os

__all__ = ["DaskCounters", "PeakMemory", "GraphCounter"]

try:  # the scheduler plugin needs distributed's base class
    from distributed.diagnostics.plugin import SchedulerPlugin as _SchedulerPlugin
except ImportError:  # pragma: no cover - distributed is a dependency of daskglm
    _SchedulerPlugin = object


class GraphCounter(_SchedulerPlugin):
    """Scheduler plugin counting the graphs submitted and the tasks in them."""

    name = "benchmarks-graph-counter"
    idempotent = True

    def __init__(self):
        self.graphs = 0
        self.tasks = 0

    def update_graph(self, scheduler, *, keys=None, tasks=None, **kwargs):
        self.graphs += 1
        self.tasks += len(tasks) if tasks is not None else 0


def _scheduler_snapshot(dask_scheduler=None):
    plugin = dask_scheduler.plugins.get(GraphCounter.name)
    streamed = 0
    for streams in (dask_scheduler.stream_comms, dask_scheduler.client_comms):
        for stream in list(streams.values()):
            streamed += int(getattr(stream, "byte_count", 0) or 0)
    return {"graphs": getattr(plugin, "graphs", 0), "tasks": getattr(plugin, "tasks", 0),
            "streamed": streamed}


def _worker_sent(dask_worker=None):
    return int(getattr(dask_worker, "transfer_outgoing_bytes_total", 0) or 0)


class DaskCounters:
    """Deltas of Dask's counters over one call (see the module docstring).

    Parameters
    ----------
    client : distributed.Client
    """

    def __init__(self, client):
        self.client = client
        client.register_plugin(GraphCounter(), name=GraphCounter.name)

    def snapshot(self):
        """The counters now."""
        stream = getattr(self.client, "scheduler_comm", None)
        submitted = int(getattr(stream, "byte_count", 0) or 0)
        scheduler = self.client.run_on_scheduler(_scheduler_snapshot)
        workers = sum(self.client.run(_worker_sent).values())
        return {"submitted": submitted, "workers": workers, **scheduler}

    @staticmethod
    def delta(before, after):
        """Graphs, tasks and bytes between two snapshots.

        Returns
        -------
        dict
            ``graphs``, ``tasks``, ``bytes`` (client submissions + scheduler streams +
            worker transfers) and each byte count on its own.
        """
        diff = {key: after[key] - before[key] for key in before}
        return {
            "graphs": diff["graphs"],
            "tasks": diff["tasks"],
            "bytes": diff["submitted"] + diff["streamed"] + diff["workers"],
            "bytes_submitted": diff["submitted"],
            "bytes_dispatched": diff["streamed"],
            "bytes_transferred": diff["workers"],
        }


def _reset_peak():
    """Reset this process's peak resident memory; True if the kernel allowed it."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _memory_status():
    """``(peak, current)`` resident bytes of this process, or ``(None, None)``."""
    values = {}
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    name, amount = line.split(":", 1)
                    values[name] = int(amount.split()[0]) * 1024
    except OSError:
        return None, None
    return values.get("VmHWM"), values.get("VmRSS")


def _reset_and_read():
    reset = _reset_peak()
    peak, current = _memory_status()
    return {"reset": reset, "rss": current, "pid": os.getpid()}


def _read():
    peak, current = _memory_status()
    return {"peak": peak, "rss": current}


class PeakMemory:
    """Peak resident memory of the workers (or of this process) during one call.

    Parameters
    ----------
    client : distributed.Client or None
        None measures this process only (for in-memory methods).
    """

    def __init__(self, client=None):
        self.client = client
        self._before = None

    def start(self):
        """Reset the peaks; remember the resident memory before the call."""
        if self.client is None:
            self._before = {"local": _reset_and_read()}
        else:
            self._before = self.client.run(_reset_and_read)

    def stop(self):
        """The peaks since :meth:`start`.

        Returns
        -------
        dict or None
            ``peak_bytes`` (the largest process's peak), ``before_bytes`` (that process's
            resident memory before the call) and ``added_bytes`` (the largest increase of
            any process over its resident memory before the call); None where the kernel
            offers no resettable peak.
        """
        after = {"local": _read()} if self.client is None else self.client.run(_read)
        if not all(self._before[w]["reset"] for w in self._before if w in after):
            return None
        rows = [(after[w]["peak"], self._before[w]["rss"]) for w in after if w in self._before]
        rows = [(peak, before) for peak, before in rows if peak is not None and before is not None]
        if not rows:
            return None
        peak, before = max(rows)
        return {"peak_bytes": peak, "before_bytes": before,
                "added_bytes": max(p - b for p, b in rows)}
