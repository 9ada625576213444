"""The cluster's worker processes: the local cluster, their process ids, memory limits,
run-queue waits and log warnings, and a monitor of their memory and CPU time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading

from daskglm.engine.dask_compat import cluster_workers

#: The clusters: worker processes and threads per worker.
N_WORKERS, THREADS_PER_WORKER = 2, 1


@contextlib.contextmanager
def local_cluster(memory_limit="auto"):
    """A ``LocalCluster`` of two single-threaded worker processes and its ``Client``.

    Parameters
    ----------
    memory_limit : str or int
        Each worker's memory limit, as ``LocalCluster`` takes it (``"1GB"``, bytes, or
        ``"auto"``: the machine's memory shared between the workers).

    Yields
    ------
    distributed.Client
        The default client while the block runs.
    """
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.WARNING)
    with LocalCluster(n_workers=N_WORKERS, threads_per_worker=THREADS_PER_WORKER,
                      processes=True, memory_limit=memory_limit, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(_prepare_worker)
        yield client


def _prepare_worker():
    """Run on a worker: import what the rounds need, and print tracebacks on a crash.

    Importing first keeps the imports out of the first round's time; ``faulthandler``
    prints every thread's traceback to stderr should the worker die of a fatal signal.
    """
    import faulthandler

    import zarr  # noqa: F401

    import daskglm.compute.kernels
    import daskglm.engine  # noqa: F401

    faulthandler.enable()


def worker_pids(client):
    """``{worker address: process id}``."""
    return client.run(os.getpid)


def memory_limits(client):
    """``{worker address: memory limit in bytes}``."""
    workers = cluster_workers(client)
    return {address: info.get("memory_limit") for address, info in workers.items()}


def _run_queue_seconds(pid):
    """Seconds the threads of process ``pid`` have waited on a run queue, or None.

    From ``/proc/<pid>/task/<tid>/schedstat`` (time on a CPU, time runnable but waiting
    for one, timeslices), summed over the process's live threads.
    """
    waited, found = 0, False
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/schedstat") as handle:
                waited += int(handle.read().split()[1])
                found = True
        except (OSError, ValueError, IndexError):
            continue
    return waited / 1e9 if found else None


class WorkerMonitor:
    """Peak resident memory, CPU time and run-queue waits of the worker processes.

    Polled from this process.  The scheduler's view (``MemorySampler``) comes from the
    workers' heartbeats, about every half second; polling the processes directly catches
    shorter peaks.  The run-queue wait is the time the workers' threads were ready to run
    but every core was taken (by the other worker, the driver, or any other process on a
    shared machine).

    Parameters
    ----------
    pids : dict
        ``{worker address: process id}``; the workers run on this machine.
    interval : float
        Seconds between polls.

    Attributes
    ----------
    peak : dict
        ``{worker address: largest resident set size seen, in bytes}``.
    cpu_seconds, wait_seconds : dict
        ``{worker address: seconds}`` of CPU time, and of run-queue waits summed over the
        process's threads, while the block ran (filled when it ends; a worker process
        that ended meanwhile is left out).
    """

    def __init__(self, pids, interval=0.05):
        import psutil

        self.processes = {address: psutil.Process(pid) for address, pid in pids.items()}
        self.interval = float(interval)
        self.peak = dict.fromkeys(self.processes, 0)
        self.cpu_seconds, self.wait_seconds = {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _cpu(self):
        times = {}
        for address, process in self.processes.items():
            try:
                cpu = process.cpu_times()
            except Exception:  # a worker that went away: the restart check reports it
                continue
            times[address] = cpu.user + cpu.system
        return times

    def _poll(self):
        while not self._stop.is_set():
            for address, process in self.processes.items():
                try:
                    rss = process.memory_info().rss
                except Exception:  # a worker that went away: the restart check reports it
                    continue
                self.peak[address] = max(self.peak[address], rss)
            self._stop.wait(self.interval)

    def _waits(self):
        return {address: _run_queue_seconds(process.pid)
                for address, process in self.processes.items()}

    def __enter__(self):
        self._cpu_start, self._wait_start = self._cpu(), self._waits()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        end = self._cpu()
        self.cpu_seconds = {a: end[a] - self._cpu_start[a] for a in end if a in self._cpu_start}
        waits = self._waits()
        self.wait_seconds = {
            a: waits[a] - self._wait_start[a] for a in waits
            if waits[a] is not None and self._wait_start.get(a) is not None
        }


def worker_warnings(client):
    """Warnings and errors in the logs of the workers and their nannies (memory, restarts)."""
    found = []
    for nanny in (False, True):
        try:
            logs = client.get_worker_logs(nanny=nanny)
        except Exception:
            continue
        for address, lines in logs.items():
            for level, message in lines:
                if level in ("WARNING", "ERROR", "CRITICAL"):
                    found.append(f"{'nanny' if nanny else 'worker'} {address}: {level} "
                                 f"{message.splitlines()[0][:300]}")
    return found
