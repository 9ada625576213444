"""Stores and fits: writing and describing a store, fitting it and summarising the fit,
and where the time of a streamed pass goes (per task, per chunk).
"""

from __future__ import annotations

import os
import shutil
import time
import warnings

import numpy as np

from benchmarks.out_of_core.pagecache import file_bytes, sequential_read, store_files
from benchmarks.out_of_core.units import median, rate, scaled
from benchmarks.out_of_core.workers import N_WORKERS, THREADS_PER_WORKER

#: Bytes of one row chunk of ``X`` when ``--chunks`` is not given.
CHUNK_BYTES = 1 << 25

#: The steps of one streamed partition task, in order (see :func:`chunk_steps`).
STREAMED_STEPS = ("read + decode (zarr)", "pack partition", "gradient kernel")


def default_chunks(n_features):
    """Rows per chunk of ``X`` when ``--chunks`` is not given: about :data:`CHUNK_BYTES`
    of float64 per chunk."""
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
    on_disk = file_bytes(store_files(path, "X") + store_files(path, "y"))
    nbytes = int(X.nbytes + y.nbytes)
    return {"path": str(path), "n_samples": int(n_samples), "n_features": int(n_features),
            "chunks": int(chunks), "n_chunks": int(X.numblocks[0]), "dtype": str(X.dtype),
            "compressor": compressor, "bytes": nbytes, "bytes_on_disk": on_disk,
            "seconds": seconds, "gb_per_s": rate(nbytes, seconds)}


def describe_store(path):
    """The description :func:`write_store` returns, for an existing store (no timings)."""
    from daskglm.io import load_zarr

    X, y, _ = load_zarr(path)
    return {"path": str(path), "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
            "chunks": int(X.chunks[0][0]), "n_chunks": int(X.numblocks[0]),
            "dtype": str(X.dtype), "bytes": int(X.nbytes + y.nbytes), "seconds": None,
            "gb_per_s": None}


def check_free_space(directory, nbytes):
    """Exit with a message when a store of about ``nbytes`` would not fit in the space free
    under ``directory``."""
    free = shutil.disk_usage(directory).free
    if nbytes * 1.05 + 1e9 > free:
        raise SystemExit(f"A store of about {nbytes / 1e9:.1f} GB does not fit in the "
                         f"{free / 1e9:.1f} GB free under {directory}; pass --path elsewhere.")


def timed_fit(X, y, cache, tol, max_iter, solver="lbfgs"):
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
        "pass_median": median(r.seconds for r in passes),
        "pass_min": min((r.seconds for r in passes), default=None),
        "pass_compute_median": median(r.seconds_compute for r in passes),
        "first_round": {
            "kind": first.kind, "seconds": first.seconds, "bytes_read": first.bytes_read,
            "read_gb_per_s": rate(first.bytes_read, first.seconds),
        },
        "bytes_read": model.comm_.bytes_read,
        "source_rounds": sum(1 for r in records if r.bytes_read),
        "source_seconds": sum(r.seconds for r in records if r.bytes_read),
        "start": model.comm_.choices.get("start"),
        "read_gb_per_s": median(rate(r.bytes_read, r.seconds) for r in reading),
        "read_disk_gb_per_s": median(rate(bytes_on_disk, r.seconds) for r in reading),
        "worker_cpu_seconds": cpu,
        "worker_cpu_share": scaled(cpu, 1 / thread_seconds),
        "worker_wait_seconds": wait,
        "worker_wait_threads": scaled(wait, 1 / seconds),
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


def traced_fit(client, X, y, cache, tol, max_iter):
    """A fit under Dask's task stream; the model, its seconds and the per-step breakdown."""
    from distributed import get_task_stream

    start = time.time()
    with get_task_stream(client) as stream:
        model, seconds = timed_fit(X, y, cache, tol, max_iter)
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
    return {step: median(values) for step, values in times.items()}
