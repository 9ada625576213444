"""Out-of-core fits: partitions persisted on the workers against partitions read from zarr.

``python -m benchmarks.out_of_core`` runs two parts, each on a ``distributed.LocalCluster``
of two single-threaded worker processes, prints markdown tables and writes
``benchmarks/results/out_of_core.json``:

compare
    One zarr store that fits in the workers' memory, fitted by
    ``LogisticRegression(solver="lbfgs")`` with ``cache="memory"`` (the partitions are read
    once and persisted) and with ``cache="none"`` (every round reads every partition from
    the store), alternately, ``--repeats`` times each.  Time per pass is the median wall
    time of a fit's gradient rounds (``est.comm_.records``), time per fit the wall time of
    ``fit``.  The read throughput of streamed rounds (``bytes_read`` of a round over its
    seconds) is set against a plain sequential read of the chunk files of ``X``
    (``open().read()``): as found, cold (the files evicted from the page cache first) and
    warm.  Where the time of a streamed pass goes is broken down twice: from Dask's task
    stream during one ``cache="none"`` fit, and by timing each step of one chunk (read the
    file, decode it with zarr, pack it, run the gradient kernel) in this process.
bounded
    A store larger than the workers' memory limits (``--memory-limit`` each), fitted with
    ``cache="auto"``, which keeps the leading partitions that fit in half the free
    memory and streams the others (``"partial"``, or ``"none"`` when none fits), with
    ``solver="auto"`` choosing by the measured cost of a pass: time per pass, read throughput, peak
    worker memory against the limit (``distributed.diagnostics.MemorySampler`` with
    ``measure="process"``, which sums the workers, and each worker process's resident
    memory polled from this process) and whether a worker was restarted or warned about
    its memory.

Stores are written by :func:`daskglm.datasets.make_classification` into a temporary
directory under ``--path`` (the system's temporary directory by default), removed at the
end.  How much of a store is in the page cache is measured with ``mincore(2)``; a store's
files are evicted from it with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no privileges
needed), and before the cold sequential read the whole page cache is dropped too where
``/proc/sys/vm/drop_caches`` can be written (root), the result recorded.

The machine's load average is recorded at the start and end of each part: on a machine
shared with other processes the timings are noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import logging
import mmap
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings

import numpy as np

from daskglm.engine.dask_compat import cluster_workers

__all__ = [
    "DEFAULT_OUTPUT",
    "store_files",
    "resident_bytes",
    "evict",
    "drop_page_cache",
    "sequential_read",
    "disk_reads",
    "WorkerMonitor",
    "local_cluster",
    "write_store",
    "fit_summary",
    "task_breakdown",
    "chunk_steps",
    "run_compare",
    "run_bounded",
    "run",
    "markdown",
    "main",
]

#: Where the results go unless ``--output`` says otherwise (git-ignored).
DEFAULT_OUTPUT = pathlib.Path(__file__).resolve().parent / "results" / "out_of_core.json"

#: The clusters: worker processes and threads per worker.
N_WORKERS, THREADS_PER_WORKER = 2, 1

#: Bytes of one row chunk of ``X`` when ``--chunks`` is not given.
CHUNK_BYTES = 1 << 25

#: A store larger than the machine's memory, for the projected write time: this many
#: times the memory (zstd shrinks random float64 data by about 6% on disk).
LARGER_THAN_MEMORY = 1.1

#: Names of the metadata files of zarr formats 2 and 3, never chunks.
METADATA_FILES = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})

#: The steps of one streamed partition task, in order (see :func:`chunk_steps`).
STREAMED_STEPS = ("read + decode (zarr)", "pack partition", "gradient kernel")

#: Libraries whose versions the results record.
LIBRARIES = ("daskglm", "dask", "distributed", "zarr", "numcodecs", "numpy", "scipy")


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _gb(nbytes):
    return _scaled(nbytes, 1e-9)


def _rate(nbytes, seconds):
    """Gigabytes per second, or None without a positive duration."""
    return nbytes / seconds / 1e9 if nbytes is not None and seconds else None


def _scaled(value, factor):
    return None if value is None else value * factor


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# the store's files and the page cache ------------------------------------------------------
def store_files(path, name):
    """The chunk files of the array ``name`` of a zarr store, in chunk order.

    Parameters
    ----------
    path : str or os.PathLike
        Directory of the store (zarr format 2 or 3).
    name : str
        Array in the store's root group, e.g. ``"X"``.

    Returns
    -------
    list of pathlib.Path
        Every file under the array's directory except zarr's metadata files.
    """
    root = pathlib.Path(path) / name

    def order(file):
        parts = file.relative_to(root).parts
        return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)

    files = [p for p in root.rglob("*") if p.is_file() and p.name not in METADATA_FILES]
    return sorted(files, key=order)


def _file_bytes(files):
    return sum(os.path.getsize(f) for f in files)


def _libc():
    """``mmap``, ``munmap`` and ``mincore`` of the C library, with their signatures."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    return libc


def resident_bytes(files):
    """Bytes of ``files`` held in the page cache, from ``mincore(2)``.

    Mapping a file and asking the kernel which of its pages are resident reads nothing
    and changes nothing in the cache.

    Parameters
    ----------
    files : iterable of path-like

    Returns
    -------
    int or None
        None where the residency cannot be measured (no ``mincore``, a failed call).
    """
    try:
        libc = _libc()
    except (OSError, AttributeError):
        return None
    failed = ctypes.c_void_p(-1).value
    page = mmap.PAGESIZE
    total = 0
    for file in files:
        size = os.path.getsize(file)
        if size == 0:
            continue
        with open(file, "rb") as handle:
            address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, handle.fileno(), 0)
        if address is None or address == failed:
            return None
        try:
            pages = -(-size // page)
            vector = (ctypes.c_ubyte * pages)()
            if libc.mincore(address, size, vector) != 0:
                return None
            resident = int(np.count_nonzero(np.frombuffer(vector, dtype=np.uint8) & 1))
        finally:
            libc.munmap(address, size)
        total += min(size, resident * page)
    return total


def _resident_share(files):
    """Share of the bytes of ``files`` in the page cache, or None."""
    resident, size = resident_bytes(files), _file_bytes(files)
    return None if resident is None or not size else resident / size


def evict(files):
    """Evict ``files`` from the page cache: write back dirty pages, then drop theirs.

    Uses ``posix_fadvise(POSIX_FADV_DONTNEED)`` file by file, which needs no privileges
    and leaves every other file's pages alone.

    Parameters
    ----------
    files : iterable of path-like

    Returns
    -------
    float or None
        Share of the files' bytes still in the page cache afterwards.
    """
    files = list(files)
    os.sync()
    for file in files:
        fd = os.open(file, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return _resident_share(files)


def drop_page_cache():
    """Try to drop the whole page cache (``echo 3 > /proc/sys/vm/drop_caches``).

    Needs root; on a shared machine it slows other processes' next reads for a while.

    Returns
    -------
    dict
        ``ok`` (whether the kernel accepted the write) and ``note`` (the error, if any).
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as handle:
            handle.write("3\n")
    except OSError as exc:
        return {"ok": False, "note": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "note": "page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)"}


def sequential_read(files, label):
    """Read every file whole with ``open().read()``, one after the other.

    Parameters
    ----------
    files : list of path-like
    label : str
        What this read is (``"as found"``, ``"cold"``, ``"warm"``).

    Returns
    -------
    dict
        ``read``, ``resident_before`` (share of the bytes in the page cache before the
        read), ``bytes``, ``seconds``, ``gb_per_s``.
    """
    resident = _resident_share(files)
    total = 0
    start = time.perf_counter()
    for file in files:
        with open(file, "rb") as handle:
            total += len(handle.read())
    seconds = time.perf_counter() - start
    return {"read": label, "resident_before": resident, "bytes": total, "seconds": seconds,
            "gb_per_s": _rate(total, seconds)}


def disk_reads(files, drop=True):
    """Sequential reads of ``files``: as found, cold and warm.

    Parameters
    ----------
    files : list of path-like
    drop : bool
        Before the cold read, try to drop the whole page cache (:func:`drop_page_cache`)
        as well as evicting ``files`` (:func:`evict`).

    Returns
    -------
    dict
        ``reads`` (one dict per read, see :func:`sequential_read`), ``drop_caches`` (the
        outcome of the attempt, or None when not tried), ``resident_after_drop`` and
        ``resident_after_evict`` (shares of the files still cached after each step).
    """
    reads = [sequential_read(files, "as found")]
    dropped = drop_page_cache() if drop else None
    after_drop = _resident_share(files) if drop else None
    after_evict = evict(files)
    reads.append(sequential_read(files, "cold"))
    reads.append(sequential_read(files, "warm"))
    return {"reads": reads, "drop_caches": dropped, "resident_after_drop": after_drop,
            "resident_after_evict": after_evict}


# the cluster and its workers ----------------------------------------------------------------
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


def _worker_pids(client):
    """``{worker address: process id}``."""
    return client.run(os.getpid)


def _memory_limits(client):
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


def _worker_warnings(client):
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


# data ------------------------------------------------------------------------------------------
def _default_chunks(n_features):
    return max(1, CHUNK_BYTES // (8 * n_features))


def write_store(path, n_samples, n_features, chunks, random_state=0, dtype="float64",
                compressor="default"):
    """Write a classification data set to a zarr store on the active cluster; time it.

    Parameters
    ----------
    path : str
    n_samples, n_features, chunks : int
        Shape of ``X`` and rows per chunk.
    random_state : int
    dtype : {"float64", "float32"}
        Of ``X`` in the store (the rows are drawn in float64 either way).
    compressor : {"default", "none"}
        zarr's default compression (zstd) or none.

    Returns
    -------
    dict
        ``path``, ``n_samples``, ``n_features``, ``chunks``, ``n_chunks``, ``dtype``,
        ``compressor``, ``bytes`` (``X`` and ``y`` in memory: what a pass reads),
        ``bytes_on_disk`` (their chunk files), ``seconds`` (writing, then ``sync`` to the
        disk), ``gb_per_s`` (bytes in memory written per second).
    """
    from daskglm.datasets import make_classification
    from daskglm.io import load_zarr, write_zarr

    start = time.perf_counter()
    if dtype == "float64" and compressor == "default":
        X, y, _ = make_classification(n_samples, n_features, chunks=chunks,
                                      random_state=random_state, path=path)
    else:
        X, y, _ = make_classification(n_samples, n_features, chunks=chunks,
                                      random_state=random_state)
        write_zarr(path, X.astype(dtype), y, chunks=chunks,
                   compressor=None if compressor == "none" else "default")
        X, y, _ = load_zarr(path)
    os.sync()
    seconds = time.perf_counter() - start
    on_disk = _file_bytes(store_files(path, "X") + store_files(path, "y"))
    nbytes = int(X.nbytes + y.nbytes)
    return {"path": str(path), "n_samples": int(n_samples), "n_features": int(n_features),
            "chunks": int(chunks), "n_chunks": int(X.numblocks[0]), "dtype": str(X.dtype),
            "compressor": compressor, "bytes": nbytes, "bytes_on_disk": on_disk,
            "seconds": seconds, "gb_per_s": _rate(nbytes, seconds)}


def _describe_store(path):
    """The description :func:`write_store` returns, for an existing store (no timings)."""
    from daskglm.io import load_zarr

    X, y, _ = load_zarr(path)
    return {"path": str(path), "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
            "chunks": int(X.chunks[0][0]), "n_chunks": int(X.numblocks[0]),
            "dtype": str(X.dtype), "bytes": int(X.nbytes + y.nbytes), "seconds": None,
            "gb_per_s": None}


def _check_free_space(directory, nbytes):
    free = shutil.disk_usage(directory).free
    if nbytes * 1.05 + 1e9 > free:
        raise SystemExit(f"A store of about {nbytes / 1e9:.1f} GB does not fit in the "
                         f"{free / 1e9:.1f} GB free under {directory}; pass --path elsewhere.")


# fits -----------------------------------------------------------------------------------------
def _fit(X, y, cache, tol, max_iter, solver="lbfgs"):
    """``LogisticRegression(solver=solver)`` fitted with ``cache``; the model and seconds."""
    from sklearn.exceptions import ConvergenceWarning

    import daskglm

    model = daskglm.LogisticRegression(solver=solver, tol=tol, max_iter=max_iter, cache=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model.fit(X, y)
        seconds = time.perf_counter() - start
    return model, seconds


def fit_summary(model, seconds, bytes_on_disk, monitor=None):
    """Per-fit and per-pass figures of a fitted model, from its ``comm_`` records.

    Parameters
    ----------
    model : daskglm estimator
        Fitted.
    seconds : float
        Wall time of ``fit``.
    bytes_on_disk : int
        Bytes of the store's chunk files: what one pass reads from storage.
    monitor : WorkerMonitor, optional
        What the worker processes did during the fit.

    Returns
    -------
    dict
        ``cache`` (asked) and ``cache_`` (chosen), ``method`` and ``solver_choice`` (what
        ``solver="auto"`` took on streamed data, and why), ``fit_seconds``, ``n_iter``,
        ``rounds``, ``source_rounds`` and ``source_seconds`` (the rounds that read the
        data's source, and their seconds), ``start`` (where the fit started, when not from
        zero), ``outside_rounds`` (seconds of the fit not in any round: building the
        engine, persisting the partitions for ``cache="memory"``, the driver's work
        between rounds), ``passes`` (gradient rounds), ``pass_seconds`` (each, in order),
        ``pass_median`` and ``pass_min`` (a pass: a gradient, Hessian or Gram round), ``pass_compute_median`` (thread-seconds of the
        rounds' own tasks), ``first_round`` (the validation round: with ``cache="none"``
        it reads the store; with ``"memory"`` it records the store's bytes, read before it
        starts), ``bytes_read`` and, where passes read the store, the median
        read throughput of the passes in gigabytes per second of data (``read_gb_per_s``)
        and of files (``read_disk_gb_per_s``); ``worker_cpu_share``: the workers' CPU
        seconds over the fit's wall time times the worker threads (below 1 when they were
        idle, or ready but waiting for a core); ``worker_wait_threads``: their threads'
        run-queue waits over the fit's wall time, the mean number of the workers' threads
        (every thread of the processes, not only the task threads) ready to run but
        waiting for a core.
    """
    records = model.comm_.records
    passes = [r for r in records if r.kind in ("gradient", "hessian", "gram")]
    reading = [r for r in passes if r.bytes_read]
    first = records[0]
    cpu = sum(monitor.cpu_seconds.values()) if monitor and monitor.cpu_seconds else None
    wait = sum(monitor.wait_seconds.values()) if monitor and monitor.wait_seconds else None
    thread_seconds = seconds * N_WORKERS * THREADS_PER_WORKER
    return {
        "cache": model.cache,
        "cache_": model.cache_,
        "method": model.comm_.method,
        "solver_choice": model.comm_.choices.get("solver"),
        "fit_seconds": seconds,
        "n_iter": int(np.max(model.n_iter_)),
        "converged": bool(model.converged_),
        "rounds": model.comm_.rounds,
        "outside_rounds": seconds - model.comm_.seconds,
        "passes": len(passes),
        "pass_seconds": [r.seconds for r in passes],
        "pass_median": _median(r.seconds for r in passes),
        "pass_min": min((r.seconds for r in passes), default=None),
        "pass_compute_median": _median(r.seconds_compute for r in passes),
        "first_round": {
            "kind": first.kind, "seconds": first.seconds, "bytes_read": first.bytes_read,
            "read_gb_per_s": _rate(first.bytes_read, first.seconds),
        },
        "bytes_read": model.comm_.bytes_read,
        "source_rounds": sum(1 for r in records if r.bytes_read),
        "source_seconds": sum(r.seconds for r in records if r.bytes_read),
        "start": model.comm_.choices.get("start"),
        "read_gb_per_s": _median(_rate(r.bytes_read, r.seconds) for r in reading),
        "read_disk_gb_per_s": _median(_rate(bytes_on_disk, r.seconds) for r in reading),
        "worker_cpu_seconds": cpu,
        "worker_cpu_share": _scaled(cpu, 1 / thread_seconds),
        "worker_wait_seconds": wait,
        "worker_wait_threads": _scaled(wait, 1 / seconds),
    }


def _incoming_transfers(start, stop, dask_worker=None):
    """Run on a worker: the data it fetched from other workers between two wall times."""
    return [
        {"keys": dict(entry["keys"]), "total": entry["total"], "duration": entry["duration"]}
        for entry in list(dask_worker.transfer_incoming_log)
        if start <= entry["start"] <= stop
    ]


def _step(key, names):
    """What a task of a streamed fit does, from its key."""
    name = key[0] if isinstance(key, tuple) else str(key)
    if name in names:
        return names[name]
    prefix = name.split("-", 1)[0]
    if prefix == "daskglm_sum":
        return "combine partial results"
    if prefix.startswith("daskglm_"):
        return f"kernel ({prefix[len('daskglm_'):]})"
    if prefix == "_as_partition":
        return "pack partition"
    return "other"


def task_breakdown(stream, transfers, names, passes):
    """Thread-seconds per pass of each step of a streamed fit, from Dask's task stream.

    Parameters
    ----------
    stream : list of dict
        ``distributed.get_task_stream`` records of the fit.
    transfers : dict
        ``{worker: [transfer, ...]}`` as returned by :func:`_incoming_transfers`.
    names : dict
        ``{dask array name: step}`` for the chunk-reading tasks of ``X`` and ``y``.
    passes : int
        Rounds of the fit that read the store.

    Returns
    -------
    list of dict
        One per step: ``step``, ``tasks``, ``seconds`` (compute thread-seconds),
        ``transfers``, ``transfer_bytes``, ``transfer_seconds`` (the step's results that
        another worker fetched), all per pass.
    """
    rows = {}

    def row(step):
        return rows.setdefault(step, {"step": step, "tasks": 0, "seconds": 0.0, "transfers": 0,
                                      "transfer_bytes": 0, "transfer_seconds": 0.0})

    for task in stream:
        entry = row(_step(task["key"], names))
        for startstop in task.get("startstops", ()):
            if startstop["action"] == "compute":
                entry["tasks"] += 1
                entry["seconds"] += startstop["stop"] - startstop["start"]
    for fetched in transfers.values():
        for transfer in fetched:
            keys = transfer["keys"]
            share = transfer["duration"] / max(1, len(keys))
            for key, nbytes in keys.items():
                entry = row(_step(key, names))
                entry["transfers"] += 1
                entry["transfer_bytes"] += int(nbytes or 0)
                entry["transfer_seconds"] += share
    per_pass = max(1, passes)
    for entry in rows.values():
        for field in ("tasks", "seconds", "transfers", "transfer_bytes", "transfer_seconds"):
            entry[field] /= per_pass
    return sorted(rows.values(), key=lambda r: -(r["seconds"] + r["transfer_seconds"]))


def _traced_fit(client, X, y, cache, tol, max_iter):
    """A fit under Dask's task stream; the model, its seconds and the per-step breakdown."""
    from distributed import get_task_stream

    start = time.time()
    with get_task_stream(client) as stream:
        model, seconds = _fit(X, y, cache, tol, max_iter)
    transfers = client.run(_incoming_transfers, start, time.time())
    passes = sum(1 for r in model.comm_.records if r.bytes_read)
    names = {X.name: "read X chunk", y.name: "read y chunk"}
    return model, seconds, task_breakdown(stream.data, transfers, names, passes)


def chunk_steps(path, X, y, n_chunks=4):
    """Seconds of each step a streamed pass takes per chunk, timed in this process.

    For ``n_chunks`` chunks spread over the store, one thread (BLAS limited to one): read
    and decode the chunk of ``X`` and ``y`` with zarr, pack it as the engine does and run
    the gradient kernel; and, to see what zarr's read is made of, read the chunk files
    whole (``open().read()``) and decompress ``X``'s file on its own (numcodecs, when the
    store's compressor is zstd).  The files are read once first, so every step reads the
    page cache.

    Parameters
    ----------
    path : str
        The store.
    X, y : dask.array.Array
        The store's arrays (:func:`daskglm.io.load_zarr`).
    n_chunks : int

    Returns
    -------
    dict
        ``{step: median seconds per chunk}``: ``"read + decode (zarr)"``,
        ``"pack partition"`` and ``"gradient kernel"`` (the steps of a streamed task),
        ``"file read"`` and ``"zstd decompression"`` (parts of zarr's step; the latter None
        for another compressor).
    """
    import zarr
    from numcodecs import Zstd
    from threadpoolctl import threadpool_limits

    from daskglm.compute.kernels import loss_grad
    from daskglm.engine.partitions import _as_partition
    from daskglm.model.families import Binomial

    group = zarr.open_group(str(path), mode="r")
    x_files, y_files = store_files(path, "X"), store_files(path, "y")
    bounds = np.cumsum((0,) + X.chunks[0])
    chosen = np.unique(np.linspace(0, len(x_files) - 1, n_chunks).astype(int))
    params = np.full(X.shape[1] + 1, 0.01)
    family = Binomial()
    compressors = getattr(group["X"], "compressors", None) or (group["X"].compressor,)
    zstd = any("zstd" in type(c).__name__.lower() for c in compressors if c is not None)
    times = {"read + decode (zarr)": [], "pack partition": [], "gradient kernel": [],
             "file read": [], "zstd decompression": []}
    with threadpool_limits(limits=1):
        for i in chosen:
            sequential_read([x_files[i], y_files[i]], "warm-up")
            start = time.perf_counter()
            with open(x_files[i], "rb") as handle:
                raw = handle.read()
            with open(y_files[i], "rb") as handle:
                handle.read()
            times["file read"].append(time.perf_counter() - start)
            if zstd:
                start = time.perf_counter()
                Zstd().decode(raw)
                times["zstd decompression"].append(time.perf_counter() - start)
            a, b = int(bounds[i]), int(bounds[i + 1])
            start = time.perf_counter()
            x_block, y_block = group["X"][a:b], group["y"][a:b]
            times["read + decode (zarr)"].append(time.perf_counter() - start)
            start = time.perf_counter()
            part = _as_partition(x_block, y_block, None)
            times["pack partition"].append(time.perf_counter() - start)
            start = time.perf_counter()
            loss_grad(part, params, family, True)
            times["gradient kernel"].append(time.perf_counter() - start)
    return {step: _median(values) for step, values in times.items()}


# the two parts -----------------------------------------------------------------------------
def run_compare(client, path, args, log=_log):
    """Part one: ``cache="memory"`` against ``cache="none"`` on one store.

    Parameters
    ----------
    client : distributed.Client
        Two single-threaded workers, memory enough for the store.
    path : str
        Where to write the store.
    args : argparse.Namespace
        ``compare_n``, ``d``, ``chunks``, ``repeats``, ``tol``, ``compare_max_iter``,
        ``seed``, ``drop_caches``.
    log : callable

    Returns
    -------
    dict
        ``store``, ``disk`` (:func:`disk_reads` of ``X``'s files), ``fits`` (one summary
        per fit, in the order run), ``summary`` (medians per policy and the speed-ups),
        ``tasks`` (:func:`task_breakdown` of the last ``cache="none"`` fit),
        ``chunk_steps`` and ``load_average`` (start, end).
    """
    from benchmarks.environment import load_average
    from daskglm.io import load_zarr

    load_start = load_average()
    chunks = args.chunks or _default_chunks(args.d)
    _check_free_space(os.path.dirname(path), 8 * args.compare_n * (args.d + 1))
    log(f"compare: writing a {args.compare_n:,} x {args.d} store ...")
    store = write_store(path, args.compare_n, args.d, chunks, args.seed)
    log(f"  {store['bytes'] / 1e9:.2f} GB in {store['seconds']:.1f} s")
    x_files = store_files(path, "X")
    log("compare: sequential reads of X's chunk files ...")
    disk = disk_reads(x_files, drop=args.drop_caches)
    X, y, _ = load_zarr(path)
    pids = _worker_pids(client)
    fits, tasks = [], None
    for repeat in range(args.repeats):
        for cache in ("memory", "none"):
            last = repeat == args.repeats - 1 and cache == "none"
            with WorkerMonitor(pids) as monitor:
                if last:
                    model, seconds, tasks = _traced_fit(client, X, y, cache, args.tol,
                                                        args.compare_max_iter)
                else:
                    model, seconds = _fit(X, y, cache, args.tol, args.compare_max_iter)
            fits.append(fit_summary(model, seconds, store["bytes_on_disk"], monitor))
            log(f"  fit {repeat + 1}/{args.repeats} cache={cache!r}: {seconds:.1f} s, "
                f"{fits[-1]['passes']} passes of {fits[-1]['pass_median']:.3f} s (median)")
    log("compare: timing the steps of one chunk in this process ...")
    steps = chunk_steps(path, X, y)
    summary = {}
    for cache in ("memory", "none"):
        mine = [f for f in fits if f["cache"] == cache]
        summary[cache] = {
            "fit_seconds": _median(f["fit_seconds"] for f in mine),
            "pass_median": _median(f["pass_median"] for f in mine),
            "pass_compute_median": _median(f["pass_compute_median"] for f in mine),
            "passes": _median(f["passes"] for f in mine),
            "first_round_seconds": _median(f["first_round"]["seconds"] for f in mine),
            "outside_rounds": _median(f["outside_rounds"] for f in mine),
            "read_gb_per_s": _median(f["read_gb_per_s"] for f in mine),
            "read_disk_gb_per_s": _median(f["read_disk_gb_per_s"] for f in mine),
            "worker_cpu_share": _median(f["worker_cpu_share"] for f in mine),
            "worker_wait_threads": _median(f["worker_wait_threads"] for f in mine),
        }
    summary["speedup_per_pass"] = summary["none"]["pass_median"] / summary["memory"]["pass_median"]
    summary["speedup_per_fit"] = summary["none"]["fit_seconds"] / summary["memory"]["fit_seconds"]
    return {"store": store, "disk": disk, "fits": fits, "summary": summary, "tasks": tasks,
            "chunk_steps": steps, "load_average": [load_start, load_average()]}


@contextlib.contextmanager
def _start(from_zero):
    """With ``from_zero``, fits start from zero coefficients instead of from a solve on the
    partitions kept in memory (the comparison the kept-part start is measured by)."""
    if not from_zero:
        yield
        return
    from daskglm.estimators.base import _GLMBase

    kept_start = _GLMBase._start_on_kept_part
    _GLMBase._start_on_kept_part = lambda self, plan, name, problem, solver, engine, params0: \
        params0
    try:
        yield
    finally:
        _GLMBase._start_on_kept_part = kept_start


def run_bounded(path, store, args, log=_log):
    """Part two: a store larger than the workers' memory limits, fitted with ``cache="auto"``.

    Parameters
    ----------
    path : str
        The store (written by :func:`write_store`, or given with ``--store``).
    store : dict
        Its description (:func:`write_store`); only ``bytes_on_disk`` and ``seconds`` may be
        missing.
    args : argparse.Namespace
        ``memory_limit``, ``tol``, ``max_iter``, ``drop_caches``, ``from_zero``,
        ``kept_copies`` (Dask's config key ``daskglm.kept-copies`` during the fit).
    log : callable

    Returns
    -------
    dict
        ``store``, ``memory_limit`` (per worker, bytes), ``disk`` (a cold sequential read
        of ``X``'s files), ``resident_before_fit`` and ``resident_after_fit`` (shares of
        the store in the page cache), ``fit`` (:func:`fit_summary`), ``cache_reason``,
        ``peak_process_memory`` (``MemorySampler``, the workers summed),
        ``peak_rss`` (per worker), ``worker_cpu_seconds``, ``restarted``,
        ``worker_warnings`` and ``load_average`` (start, end).
    """
    import dask
    from distributed.diagnostics import MemorySampler

    from benchmarks.environment import load_average
    from daskglm.io import load_zarr

    load_start = load_average()
    files = store_files(path, "X") + store_files(path, "y")
    x_files = store_files(path, "X")
    store = {**store, "bytes_on_disk": _file_bytes(files)}
    with local_cluster(memory_limit=args.memory_limit) as client:
        limits = _memory_limits(client)
        log(f"bounded: {store['bytes'] / 1e9:.2f} GB store, workers limited to "
            f"{', '.join(f'{v / 1e9:.2f} GB' for v in limits.values())}")
        log("bounded: cold sequential read of X's chunk files ...")
        dropped = drop_page_cache() if args.drop_caches else None
        evict(files)
        disk = sequential_read(x_files, "cold")
        resident_before = evict(files)
        X, y, _ = load_zarr(path)
        pids = _worker_pids(client)
        addresses = set(limits)
        sampler = MemorySampler()
        log("bounded: fitting with cache='auto' ...")
        logging.getLogger("daskglm").setLevel(logging.INFO)
        reasons = _CacheReasons()
        logging.getLogger("daskglm").addHandler(reasons)
        try:
            with WorkerMonitor(pids) as monitor, \
                    sampler.sample("fit", client=client, measure="process", interval=0.25):
                with _start(getattr(args, "from_zero", False)), dask.config.set(
                        {"daskglm.kept-copies": getattr(args, "kept_copies", "exact")}):
                    model, seconds = _fit(X, y, "auto", args.tol, args.max_iter,
                                          solver="auto")
        finally:
            logging.getLogger("daskglm").removeHandler(reasons)
        resident_after = _resident_share(files)
        restarted = {
            "pids_before": pids,
            "pids_after": _worker_pids(client),
            "workers_before": sorted(addresses),
            "workers_after": sorted(_memory_limits(client)),
        }
        restarted["any"] = (restarted["pids_before"] != restarted["pids_after"]
                            or restarted["workers_before"] != restarted["workers_after"])
        worker_warnings = _worker_warnings(client)
    fit = fit_summary(model, seconds, store["bytes_on_disk"], monitor)
    if fit["cache_"] == "memory":
        log(f"bounded: cache='auto' chose {fit['cache_']!r}: the store fits in the workers' "
            f"memory (use a larger --n or a smaller --memory-limit)")
    samples = sampler.samples.get("fit", [])
    peak_total = max((value for _, value in samples), default=None)
    log(f"  cache={fit['cache_']!r}: {seconds:.1f} s, {fit['passes']} passes of "
        f"{fit['pass_median']:.2f} s (median); peak {(peak_total or 0) / 1e9:.2f} GB summed")
    return {
        "store": store,
        "memory_limit": limits,
        "drop_caches": dropped,
        "disk": disk,
        "resident_before_fit": resident_before,
        "resident_after_fit": resident_after,
        "fit": fit,
        "cache_reason": reasons.reason,
        "kept_copies": getattr(args, "kept_copies", "exact"),
        "peak_process_memory": peak_total,
        "memory_samples": len(samples),
        "peak_rss": monitor.peak,
        "worker_cpu_seconds": monitor.cpu_seconds,
        "restarted": restarted,
        "worker_warnings": worker_warnings,
        "load_average": [load_start, load_average()],
    }


class _CacheReasons(logging.Handler):
    """Keeps the reason the estimator logged for its cache policy."""

    def __init__(self):
        super().__init__(level=logging.INFO)
        self.reason = None

    def emit(self, record):
        message = record.getMessage()
        if "cache=" in message:
            self.reason = message


# the whole run ------------------------------------------------------------------------------
def _filesystem(path):
    """Device, type, size and free bytes of the file system holding ``path``."""
    path = os.path.realpath(path)
    best = ("", None, None)
    try:
        with open("/proc/mounts") as handle:
            for line in handle:
                device, mount, kind = line.split()[:3]
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best[0]):
                    best = (mount, device, kind)
    except OSError:
        pass
    usage = shutil.disk_usage(path)
    return {"mount": best[0] or None, "device": best[1], "type": best[2],
            "total_bytes": usage.total, "free_bytes": usage.free}


def run(args, log=_log):
    """Run the parts asked for in ``args``; return the results document.

    Parameters
    ----------
    args : argparse.Namespace
        As parsed by :func:`main`.
    log : callable
        Progress messages.

    Returns
    -------
    dict
    """
    from benchmarks.environment import library_versions, load_average, machine_info

    parent = args.path or tempfile.gettempdir()
    os.makedirs(parent, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="daskglm-out-of-core-", dir=parent)
    results = {
        "command": " ".join(["python -m benchmarks.out_of_core", *args.argv]),
        "cluster": {"n_workers": N_WORKERS, "threads_per_worker": THREADS_PER_WORKER},
        "machine": machine_info(),
        "disk": _filesystem(workdir),
        "versions": library_versions(LIBRARIES),
        "load_average_start": load_average(),
        "settings": {key: str(value) if isinstance(value, pathlib.Path) else value
                     for key, value in vars(args).items() if key != "argv"},
    }
    bounded = "bounded" in args.parts
    write_bounded = bounded and args.store is None
    bounded_path = os.path.join(workdir, "bounded.zarr") if write_bounded else args.store
    try:
        writes = []
        if "compare" in args.parts or write_bounded:
            with local_cluster() as client:
                if "compare" in args.parts:
                    compare_path = os.path.join(workdir, "compare.zarr")
                    results["compare"] = run_compare(client, compare_path, args, log)
                    writes.append(results["compare"]["store"])
                    shutil.rmtree(compare_path, ignore_errors=True)
                if write_bounded:
                    itemsize = 4 if args.dtype == "float32" else 8
                    _check_free_space(workdir, args.n * (itemsize * args.d + 8))
                    log(f"bounded: writing a {args.n:,} x {args.d} store ...")
                    bounded_store = write_store(bounded_path, args.n, args.d,
                                                args.chunks or _default_chunks(args.d),
                                                args.seed, args.dtype, args.compressor)
                    writes.append(bounded_store)
                    log(f"  {bounded_store['bytes'] / 1e9:.2f} GB in "
                        f"{bounded_store['seconds']:.1f} s")
        if writes:
            largest = max(writes, key=lambda w: w["bytes"])
            target = LARGER_THAN_MEMORY * (results["machine"]["memory_bytes"] or 0)
            results["write_rate"] = {
                "gb_per_s": largest["gb_per_s"],
                "from_store_bytes": largest["bytes"],
                "larger_than_memory_bytes": target,
                "seconds_for_larger_than_memory": target / 1e9 / largest["gb_per_s"],
            }
        if bounded:
            if not write_bounded:
                bounded_store = _describe_store(bounded_path)
            results["bounded"] = run_bounded(bounded_path, bounded_store, args, log)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_end"] = load_average()
    return results


# report ------------------------------------------------------------------------------------------
def _fmt(value, spec, missing=""):
    return missing if value is None else format(value, spec)


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _percent(share):
    return _fmt(None if share is None else 100 * share, ".0f", "?") + ("%" if share is not None
                                                                         else "")


def _compare_tables(compare):
    store, summary = compare["store"], compare["summary"]
    out = [
        f"**cache=\"memory\" vs cache=\"none\"**: one zarr store of {store['n_samples']:,} x "
        f"{store['n_features']} float64 ({_gb(store['bytes']):.2f} GB in memory, "
        f"{_gb(store['bytes_on_disk']):.2f} GB on disk, {store['n_chunks']} chunks of "
        f"{store['chunks']:,} rows), `LogisticRegression(solver=\"lbfgs\")`, medians of "
        f"{len(compare['fits']) // 2} fits each.",
        "",
    ]
    rows = []
    for cache in ("memory", "none"):
        s = summary[cache]
        rows.append([
            f"`{cache}`", _fmt(s["fit_seconds"], ".2f"), _fmt(s["passes"], ".0f"),
            _fmt(s["pass_median"], ".3f"), _fmt(s["pass_compute_median"], ".3f"),
            _fmt(s["first_round_seconds"], ".2f"), _fmt(s["outside_rounds"], ".2f"),
            _fmt(s["read_gb_per_s"], ".2f", "-"), _fmt(s["read_disk_gb_per_s"], ".2f", "-"),
            _percent(s["worker_cpu_share"]), _fmt(s["worker_wait_threads"], ".2f", "?"),
        ])
    out.append(_table(
        ["cache", "fit s", "passes", "s / pass", "kernel thread-s / pass",
         "first round s", "s outside rounds", "pass read GB/s (data)",
         "pass read GB/s (files)", "worker CPU busy", "worker threads waiting for a core"],
        rows))
    out += ["", f"Persisting is **{summary['speedup_per_pass']:.1f}x** faster per pass and "
                f"**{summary['speedup_per_fit']:.1f}x** faster per fit."]
    disk = compare["disk"]
    rows = [[r["read"], _percent(r["resident_before"]), _fmt(_gb(r["bytes"]), ".2f"),
             _fmt(r["seconds"], ".2f"), _fmt(r["gb_per_s"], ".2f")] for r in disk["reads"]]
    dropped = disk["drop_caches"]
    note = ("not tried" if dropped is None else
            ("worked" if dropped["ok"] else f"failed ({dropped['note']})"))
    out += ["", "**Plain sequential read** of X's chunk files (`open().read()`, one file "
                f"after the other); dropping the page cache before the cold read: {note}; "
                f"cached after dropping: {_percent(disk['resident_after_drop'])}, after "
                f"evicting the files: {_percent(disk['resident_after_evict'])}.", ""]
    out.append(_table(["read", "cached before", "GB", "s", "GB/s"], rows))
    none = summary["none"]
    if compare["tasks"]:
        wall = none["pass_median"]
        rows = [[t["step"], _fmt(t["tasks"], ".1f"), _fmt(t["seconds"], ".3f"),
                 _fmt(t["transfers"], ".1f"), _fmt(t["transfer_bytes"] / 1e6, ".1f"),
                 _fmt(t["transfer_seconds"], ".3f")] for t in compare["tasks"]]
        out += ["", "**Where a streamed pass goes** (`cache=\"none\"`, Dask's task stream of the "
                    "last fit, per pass; a pass has "
                    f"{_fmt(wall * N_WORKERS * THREADS_PER_WORKER, '.2f')} thread-s: "
                    f"{N_WORKERS * THREADS_PER_WORKER} threads x {_fmt(wall, '.3f')} s):", ""]
        out.append(_table(["step", "tasks", "compute thread-s", "results moved to the other "
                           "worker", "MB moved", "s moving"], rows))
    steps = compare["chunk_steps"]
    total = sum(steps[step] for step in STREAMED_STEPS)
    per_pass = total * store["n_chunks"] / (N_WORKERS * THREADS_PER_WORKER)
    rows = [[step, _fmt(steps[step] * 1e3, ".1f")] for step in STREAMED_STEPS[:1]]
    rows += [[f"... of which {step}", _fmt(_scaled(steps[step], 1e3), ".1f", "-")]
             for step in ("file read", "zstd decompression")]
    rows += [[step, _fmt(steps[step] * 1e3, ".1f")] for step in STREAMED_STEPS[1:]]
    rows.append(["**sum**", _fmt(total * 1e3, ".1f")])
    out += ["", "**One chunk's steps** timed in one thread of the driver (warm page cache, "
                f"median of chunks); x {store['n_chunks']} chunks / "
                f"{N_WORKERS * THREADS_PER_WORKER} threads = {per_pass:.2f} s per pass "
                f"if nothing else took time:", ""]
    out.append(_table(["step", "ms / chunk"], rows))
    return out


def _passes_rows(bounded):
    """The passes over the source and the disk target: ``fit seconds <= 1.3 x (passes x
    one cold sequential read)`` plus the rounds that read nothing."""
    fit, store, disk = bounded["fit"], bounded["store"], bounded["disk"]
    if "source_rounds" not in fit:
        return []
    passes = fit["bytes_read"] / store["bytes"]
    read_seconds = disk["bytes"] / (disk["gb_per_s"] * 1e9)
    in_memory = fit["fit_seconds"] - fit["source_seconds"]
    target = 1.3 * passes * read_seconds + in_memory
    return [
        ["rounds reading the store; passes over it (bytes read / store)",
         f"{fit['source_rounds']}; {passes:.2f}"],
        ["fit / (passes x one cold read of X + rounds reading nothing)",
         f"{fit['fit_seconds']:.1f} s / ({passes:.2f} x {read_seconds:.1f} s + "
         f"{in_memory:.1f} s) = "
         f"{fit['fit_seconds'] / (passes * read_seconds + in_memory):.2f} (target 1.3: "
         f"{target:.0f} s)"],
    ]


def _bounded_tables(bounded):
    store, fit = bounded["store"], bounded["fit"]
    limits = list(bounded["memory_limit"].values())
    limit = limits[0] if limits else None
    peak_rss = max(bounded["peak_rss"].values(), default=None)
    restarted = bounded["restarted"]["any"]
    compression = {"none": "uncompressed, ", "default": "zstd, "}.get(store.get("compressor"), "")
    rows = [
        ["store", f"{store['n_samples']:,} x {store['n_features']} "
                  f"{store.get('dtype', 'float64')}, {compression}"
                  f"{_gb(store['bytes']):.2f} GB in memory, "
                  f"{_gb(store['bytes_on_disk']):.2f} GB on disk, {store['n_chunks']} chunks"],
        ["written in", (f"{store['seconds']:.0f} s ({store['gb_per_s']:.3f} GB/s)"
                        if store.get("seconds") else "(existing store)")],
        ["worker memory limit", f"{len(limits)} x {_fmt(_gb(limit), '.2f')} GB"],
        ["store / all limits", f"{store['bytes'] / sum(limits):.1f}x" if limits else ""],
        ["cache chosen (`auto`)", f"`{fit['cache_']}`"],
        ["kept copies (`daskglm.kept-copies`)", bounded.get("kept_copies", "exact")],
        ["cache reason", bounded.get("cache_reason") or ""],
        ["solver chosen (`auto`)", f"`{fit.get('method')}`"
                                   + (f": {fit['solver_choice'][1]}" if fit.get("solver_choice")
                                      else "")],
        ["cold sequential read of X", f"{bounded['disk']['gb_per_s']:.2f} GB/s "
                                      f"({_gb(bounded['disk']['bytes']):.2f} GB)"],
        ["store cached before / after the fit",
         f"{_percent(bounded['resident_before_fit'])} / "
         f"{_percent(bounded['resident_after_fit'])}"],
        ["fit", f"{fit['fit_seconds']:.1f} s, {fit['n_iter']} iterations, "
                f"{fit['rounds']} rounds"],
        ["start", fit["start"][1] if fit.get("start") else "zero coefficients"],
        *_passes_rows(bounded),
        ["workers' CPU busy; their threads waiting for a core (mean)",
         f"{_percent(fit['worker_cpu_share'])}; {_fmt(fit['worker_wait_threads'], '.2f', '?')}"],
        ["first round (validate; the store evicted before the fit)",
         f"{fit['first_round']['seconds']:.2f} s, "
         f"{_fmt(fit['first_round']['read_gb_per_s'], '.2f')} GB/s"],
        ["s / pass (median of gradient, Hessian or Gram rounds)", f"{fit['pass_median']:.2f} "
                                                 f"(min {fit['pass_min']:.2f}, {fit['passes']} passes)"],
        ["pass read throughput", f"{_fmt(fit['read_gb_per_s'], '.2f', '-')} GB/s of data, "
                                 f"{_fmt(fit['read_disk_gb_per_s'], '.2f', '-')} GB/s of files"],
        ["peak process memory, workers summed (MemorySampler)",
         f"{_fmt(_gb(bounded['peak_process_memory']), '.2f')} GB of "
         f"{_fmt(_gb(sum(limits)), '.2f')} GB"],
        ["peak RSS of a worker (polled every 50 ms)",
         f"{_fmt(_gb(peak_rss), '.2f')} GB of {_fmt(_gb(limit), '.2f')} GB "
         f"({_percent(peak_rss / limit if peak_rss and limit else None)})"],
        ["worker restarted", "yes" if restarted else "no (same worker processes)"],
        ["worker warnings", str(len(bounded["worker_warnings"]))],
    ]
    out = ["**Bounded memory**: `LogisticRegression(solver=\"auto\", cache=\"auto\")` on a "
           "store larger than the workers' memory.", "", _table(["", ""], rows)]
    messages = {}
    for line in bounded["worker_warnings"]:
        text = line.split(": ", 1)[-1].split(" -- ")[0]
        messages[text] = messages.get(text, 0) + 1
    if messages:
        out += [""] + [f"* {count} x {text}" for text, count in messages.items()]
    if fit["cache_"] == "memory":
        out += ["", f"**`cache=\"auto\"` chose `\"{fit['cache_']}\"`**: the store fits in the "
                    "workers' memory, so this is not an out-of-core fit (use a larger --n or a "
                    "smaller --memory-limit)."]
    return out


def markdown(results):
    """The markdown tables of a results document.

    Parameters
    ----------
    results : dict
        As returned by :func:`run`.

    Returns
    -------
    str
    """
    machine = results["machine"]
    load = results["load_average_start"] or []
    out = [
        f"`{results['command']}` on {machine.get('cpu_model')}, "
        f"{machine.get('usable_cores')} usable cores, "
        f"{_fmt(_scaled(machine.get('memory_bytes'), 2**-30), '.1f')} GiB "
        f"memory; "
        f"{N_WORKERS} workers x {THREADS_PER_WORKER} thread; load average at the start "
        f"{', '.join(f'{v:.1f}' for v in load)}.",
        "",
    ]
    if "compare" in results:
        out += _compare_tables(results["compare"]) + [""]
    if "write_rate" in results:
        rate = results["write_rate"]
        out += [f"The largest store written ({rate['from_store_bytes'] / 1e9:.2f} GB) was "
                f"written at {rate['gb_per_s']:.3f} GB/s (generating, compressing, writing and "
                f"`sync`): a "
                f"{rate['larger_than_memory_bytes'] / 1e9:.1f} GB store (larger than the "
                f"machine's memory) would take about "
                f"{rate['seconds_for_larger_than_memory'] / 60:.0f} minutes to write.", ""]
    if "bounded" in results:
        out += _bounded_tables(results["bounded"]) + [""]
    return "\n".join(out).rstrip() + "\n"


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.out_of_core",
        description="Persisted partitions against partitions streamed from a zarr store.",
    )
    parser.add_argument("--parts", nargs="+", choices=("compare", "bounded"),
                        default=["compare", "bounded"], help="Parts to run (default: both).")
    parser.add_argument("--compare-n", type=int, default=2_000_000,
                        help="Rows of the compare store (default: 2,000,000).")
    parser.add_argument("--n", type=int, default=10_000_000,
                        help="Rows of the bounded-memory store (default: 10,000,000).")
    parser.add_argument("--d", type=int, default=50, help="Features (default: 50).")
    parser.add_argument("--chunks", type=int, default=None,
                        help="Rows per chunk (default: about 32 MiB of X per chunk).")
    parser.add_argument("--memory-limit", default="1GB",
                        help="Memory limit of each worker of the bounded run (default: 1GB).")
    parser.add_argument("--path", default=None,
                        help="Directory for the temporary stores (default: the system's "
                             "temporary directory); they are removed at the end.")
    parser.add_argument("--store", default=None,
                        help="Use this existing store for the bounded run instead of "
                             "writing one (it is left in place).")
    parser.add_argument("--repeats", type=int, default=2,
                        help="Fits per cache policy in the compare part (default: 2).")
    parser.add_argument("--tol", type=float, default=1e-6,
                        help="Tolerance of every fit (default: 1e-6).")
    parser.add_argument("--compare-max-iter", type=int, default=100,
                        help="Iteration cap of the compare fits (default: 100).")
    parser.add_argument("--max-iter", type=int, default=5,
                        help="Iteration cap of the bounded fit (default: 5).")
    parser.add_argument("--seed", type=int, default=0, help="Random state of the data.")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="dtype of X in the bounded run's store (default: float64).")
    parser.add_argument("--compressor", choices=("default", "none"), default="default",
                        help="Compression of the bounded run's store: zarr's default "
                             "(zstd) or none (default: default).")
    parser.add_argument("--from-zero", action="store_true",
                        help="Start the bounded fit from zero coefficients, not from a solve "
                             "on the partitions kept in memory (for comparison).")
    parser.add_argument("--kept-copies", choices=("exact", "float32"), default="exact",
                        help="Dask's config key daskglm.kept-copies during the bounded fit: "
                             "keep float32 copies of a float64 X's kept partitions "
                             "(default: exact).")
    parser.add_argument("--no-drop-caches", dest="drop_caches", action="store_false",
                        help="Do not try to drop the whole page cache before cold reads "
                             "(the store's own files are evicted either way).")
    parser.add_argument("--output", type=pathlib.Path, default=DEFAULT_OUTPUT,
                        help=f"JSON results (default: {DEFAULT_OUTPUT}).")
    return parser


def main(argv=None):
    """Command line: run the benchmark, print the tables, write the JSON; returns 0."""
    from benchmarks.report import write_json

    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    results = run(args)
    path = write_json(results, args.output)
    print(markdown(results))
    print(f"Results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
