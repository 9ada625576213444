"""The benchmark's two parts (compare, bounded) and the whole run."""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import shutil
import sys
import tempfile

from benchmarks.out_of_core.fits import (
    check_free_space,
    chunk_steps,
    default_chunks,
    describe_store,
    fit_summary,
    timed_fit,
    traced_fit,
    write_store,
)
from benchmarks.out_of_core.pagecache import (
    disk_reads,
    drop_page_cache,
    evict,
    file_bytes,
    resident_share,
    sequential_read,
    store_files,
)
from benchmarks.out_of_core.units import median
from benchmarks.out_of_core.workers import (
    N_WORKERS,
    THREADS_PER_WORKER,
    WorkerMonitor,
    local_cluster,
    memory_limits,
    worker_pids,
    worker_warnings,
)

#: A store larger than the machine's memory, for the projected write time: this many
#: times the memory (zstd shrinks random float64 data by about 6% on disk).
LARGER_THAN_MEMORY = 1.1

#: Libraries whose versions the results record.
LIBRARIES = ("daskglm", "dask", "distributed", "zarr", "numcodecs", "numpy", "scipy")


def _log(message):
    print(message, file=sys.stderr, flush=True)


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
    chunks = args.chunks or default_chunks(args.d)
    check_free_space(os.path.dirname(path), 8 * args.compare_n * (args.d + 1))
    log(f"compare: writing a {args.compare_n:,} x {args.d} store ...")
    store = write_store(path, args.compare_n, args.d, chunks, args.seed)
    log(f"  {store['bytes'] / 1e9:.2f} GB in {store['seconds']:.1f} s")
    x_files = store_files(path, "X")
    log("compare: sequential reads of X's chunk files ...")
    disk = disk_reads(x_files, drop=args.drop_caches)
    X, y, _ = load_zarr(path)
    pids = worker_pids(client)
    fits, tasks = [], None
    for repeat in range(args.repeats):
        for cache in ("memory", "none"):
            last = repeat == args.repeats - 1 and cache == "none"
            with WorkerMonitor(pids) as monitor:
                if last:
                    model, seconds, tasks = traced_fit(client, X, y, cache, args.tol,
                                                       args.compare_max_iter)
                else:
                    model, seconds = timed_fit(X, y, cache, args.tol, args.compare_max_iter)
            fits.append(fit_summary(model, seconds, store["bytes_on_disk"], monitor))
            log(f"  fit {repeat + 1}/{args.repeats} cache={cache!r}: {seconds:.1f} s, "
                f"{fits[-1]['passes']} passes of {fits[-1]['pass_median']:.3f} s (median)")
    log("compare: timing the steps of one chunk in this process ...")
    steps = chunk_steps(path, X, y)
    summary = {}
    for cache in ("memory", "none"):
        mine = [f for f in fits if f["cache"] == cache]
        summary[cache] = {
            "fit_seconds": median(f["fit_seconds"] for f in mine),
            "pass_median": median(f["pass_median"] for f in mine),
            "pass_compute_median": median(f["pass_compute_median"] for f in mine),
            "passes": median(f["passes"] for f in mine),
            "first_round_seconds": median(f["first_round"]["seconds"] for f in mine),
            "outside_rounds": median(f["outside_rounds"] for f in mine),
            "read_gb_per_s": median(f["read_gb_per_s"] for f in mine),
            "read_disk_gb_per_s": median(f["read_disk_gb_per_s"] for f in mine),
            "worker_cpu_share": median(f["worker_cpu_share"] for f in mine),
            "worker_wait_threads": median(f["worker_wait_threads"] for f in mine),
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
    store = {**store, "bytes_on_disk": file_bytes(files)}
    with local_cluster(memory_limit=args.memory_limit) as client:
        limits = memory_limits(client)
        log(f"bounded: {store['bytes'] / 1e9:.2f} GB store, workers limited to "
            f"{', '.join(f'{v / 1e9:.2f} GB' for v in limits.values())}")
        log("bounded: cold sequential read of X's chunk files ...")
        dropped = drop_page_cache() if args.drop_caches else None
        evict(files)
        disk = sequential_read(x_files, "cold")
        resident_before = evict(files)
        X, y, _ = load_zarr(path)
        pids = worker_pids(client)
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
                    model, seconds = timed_fit(X, y, "auto", args.tol, args.max_iter,
                                              solver="auto")
        finally:
            logging.getLogger("daskglm").removeHandler(reasons)
        resident_after = resident_share(files)
        restarted = {
            "pids_before": pids,
            "pids_after": worker_pids(client),
            "workers_before": sorted(addresses),
            "workers_after": sorted(memory_limits(client)),
        }
        restarted["any"] = (restarted["pids_before"] != restarted["pids_after"]
                            or restarted["workers_before"] != restarted["workers_after"])
        warned = worker_warnings(client)
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
        "worker_warnings": warned,
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
        As parsed by :func:`benchmarks.out_of_core.cli.main`.
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
                    check_free_space(workdir, args.n * (itemsize * args.d + 8))
                    log(f"bounded: writing a {args.n:,} x {args.d} store ...")
                    bounded_store = write_store(bounded_path, args.n, args.d,
                                                args.chunks or default_chunks(args.d),
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
                bounded_store = describe_store(bounded_path)
            results["bounded"] = run_bounded(bounded_path, bounded_store, args, log)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_end"] = load_average()
    return results
