"""Prediction throughput: ``predict_proba`` on hashed click-through rows against the
machine's limits.

``python -m benchmarks prediction`` (``--n``, ``--log2-d``, ``--partitions``,
``--settings``, ``--repeats``, ``--drop-caches``, ``--compressor``, ``--directory``;
``--json`` for one JSON line per measurement).  The rows are those of
:mod:`benchmarks.click_through` (:class:`~benchmarks.click_through.Data`: 13 numeric and
26 hashed categorical fields, ``2**log2_d`` columns), generated on a ``LocalCluster`` of
2 single-threaded worker processes.  The model is a binary
:class:`daskglm.LogisticRegression` built from known coefficients (normal, scale 0.1),
not fitted: this is about prediction.

What is timed, each ``--repeats`` times (the median is shown), graph building included:

* ``memory``: ``model.predict_proba(X)[:, 1].sum().compute()`` on the rows persisted on
  the workers.  The probabilities are made and summed where their rows are; one number
  comes back.  Against: the memory-read bandwidth of the workers, a numpy sum over a
  256 MiB array on every worker at once, summed over the workers; and one Dask pass that
  reads every stored byte of ``X`` (the sum of its values, the largest of its column
  indices and row pointers).
* ``zarr``: the same computation on ``daskglm.io.load_zarr`` of a store written by
  :func:`daskglm.io.write_zarr` in a temporary directory: every chunk is read from the
  files, decompressed, made a CSR matrix and predicted.  Against: a raw read of the
  store's files (every file's bytes, two threads, as many as the workers), and one Dask
  pass that reads every chunk and every byte of it without the product.  With
  ``--drop-caches`` (root only) the page cache is dropped before each pass, so every
  pass reads the disk; without, a store smaller than the free memory is read from the
  page cache, and the raw read measures that.

The first line gives the 1-minute load average before the cluster starts (other
processes); each other line that before its setting's passes and after them (the
benchmark's two workers add up to 2 while they compute, and the load average follows
with a delay).

"GB/s of X read" is, in memory, the bytes of the CSR partitions (values, column indices
and row pointers) over the seconds; from zarr, the bytes of the store's files (what is
read from the disk).  The JSON lines carry both for the zarr passes.
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import pathlib
import statistics
import subprocess
import tempfile
import time
import warnings

import numpy as np

from benchmarks.click_through import INTERCEPT, Data

__all__ = ["known_model", "memory_bandwidth", "raw_read", "run", "add_parser", "main"]

SETTINGS = ("memory", "zarr")


def _lz4():
    from zarr.codecs import BloscCodec

    return BloscCodec(cname="lz4", clevel=5, shuffle="noshuffle")


#: The store's compression by name: what :func:`daskglm.io.write_zarr` is given.
COMPRESSORS = {"default": lambda: "default", "none": lambda: None, "lz4": _lz4}
#: Bytes each worker sums to measure its memory-read bandwidth (far beyond the caches).
BANDWIDTH_BYTES = 256 * 2**20


def known_model(log2_d, seed=0):
    """A fitted binary ``daskglm.LogisticRegression`` over ``2**log2_d`` columns, its
    coefficients drawn (normal, scale 0.1) rather than fitted."""
    import daskglm

    d = 2**log2_d
    model = daskglm.LogisticRegression()
    model.coef_ = np.random.default_rng(seed).normal(scale=0.1, size=(1, d))
    model.intercept_ = np.array([INTERCEPT])
    model.classes_ = np.array([0.0, 1.0])
    model.n_features_in_ = d
    return model


def _sum_for_a_while(nbytes, seconds):
    """Bytes per second of numpy sums over an array of ``nbytes`` (on one worker)."""
    a = np.ones(nbytes // 8)
    a.sum()
    reads, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        a.sum()
        reads += 1
    return reads * a.nbytes / elapsed


def memory_bandwidth(client, seconds=2.0):
    """Memory-read bandwidth of the workers, bytes/s: numpy sums over
    :data:`BANDWIDTH_BYTES` on every worker at once, summed over the workers; and the
    rate of each worker."""
    rates = client.run(_sum_for_a_while, BANDWIDTH_BYTES, seconds)
    return sum(rates.values()), rates


def _read_block(block):
    """Reads every stored byte of a CSR block once: ``[[rows, nnz, bytes, checksum]]``."""
    checksum = (float(block.data.sum()) + float(block.indices.max(initial=0))
                + float(block.indptr.max(initial=0)))
    nbytes = block.data.nbytes + block.indices.nbytes + block.indptr.nbytes
    return np.array([[block.shape[0], block.nnz, nbytes, checksum]], dtype=np.float64)


def _read_pass(X):
    """One Dask pass reading every block of ``X``: rows, non-zeros, CSR bytes."""
    blocks = X.map_blocks(_read_block, chunks=((1,) * X.numblocks[0], (4,)),
                          dtype=np.float64, meta=np.empty((0, 0)))
    rows, nnz, nbytes, _ = blocks.sum(axis=0).compute()
    return {"rows": int(rows), "nnz": int(nnz), "csr bytes": int(nbytes)}


def _predict_pass(model, X):
    """``predict_proba(X)[:, 1]`` summed on the workers: the expected number of clicks."""
    return float(model.predict_proba(X)[:, 1].sum().compute())


def _files(path):
    return [p for p in pathlib.Path(path).rglob("*") if p.is_file()]


def _read_file(path, buffer):
    read = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buffer):
            read += n
    return read


def raw_read(path, threads=2):
    """Seconds and bytes of reading every file of the store at ``path`` (``threads``
    threads, each file whole, into reused 16 MiB buffers)."""
    files = sorted(_files(path), key=lambda p: p.stat().st_size, reverse=True)
    buffers = [bytearray(16 * 2**20) for _ in range(threads)]

    def read_share(share):
        return sum(_read_file(p, buffers[share]) for p in files[share::threads])

    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        nbytes = sum(pool.map(read_share, range(threads)))
    return time.perf_counter() - start, nbytes


def drop_page_cache():
    """Write dirty pages and drop the page cache (root only)."""
    os.sync()
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _timed(compute, repeats, before=None):
    """Seconds of ``repeats`` calls of ``compute`` (``before`` untimed before each), the
    last value, and the seconds the last call's tasks computed, summed over the workers
    (from Dask's task stream)."""
    from distributed import get_task_stream

    seconds, value, task_seconds = [], None, 0.0
    for repeat in range(repeats):
        if before is not None:
            before()
        with get_task_stream() as stream:
            start = time.perf_counter()
            value = compute()
            seconds.append(time.perf_counter() - start)
        if repeat == repeats - 1:
            task_seconds = sum(part["stop"] - part["start"] for task in stream.data
                               for part in task["startstops"] if part["action"] == "compute")
    return seconds, value, task_seconds


def _warm_up(log2_d):
    """Imports and first calls of the prediction path on a worker, untimed."""
    import scipy.sparse as sp

    model = known_model(log2_d)
    model.predict_proba(sp.random(10, 2**log2_d, density=1e-4, format="csr", random_state=0))
    return True


def _line(setting, what, rows, seconds, nbytes, limit_name, limit, **extra):
    median = statistics.median(seconds)
    rate = nbytes / median
    return {"setting": setting, "what": what, "rows": rows, "seconds": median,
            "all seconds": seconds, "rows/s": rows / median, "GB/s of X read": rate / 1e9,
            "limit": limit_name, "limit GB/s": None if limit is None else limit / 1e9,
            "fraction of the limit": None if limit is None else rate / limit, **extra}


def _memory_setting(client, model, data, repeats):
    load_before = os.getloadavg()[0]
    bandwidth, per_worker = memory_bandwidth(client)
    limit = f"memory read, numpy sum on {len(per_worker)} workers at once"
    read_seconds, read, read_tasks = _timed(lambda: _read_pass(data.X), repeats)
    seconds, clicks, tasks = _timed(lambda: _predict_pass(model, data.X), repeats)
    load = {"load before": load_before, "load after": os.getloadavg()[0]}
    yield _line("memory", "predict_proba(X)[:, 1].sum()", read["rows"], seconds,
                read["csr bytes"], limit, bandwidth, nnz=read["nnz"], **load,
                **{"expected clicks": clicks, "task seconds": tasks,
                   "task ns per non-zero": tasks / read["nnz"] * 1e9,
                   "GB/s per worker of the numpy sum": [r / 1e9 for r in per_worker.values()]})
    yield _line("memory", "one read of X (no product)", read["rows"], read_seconds,
                read["csr bytes"], limit, bandwidth, **load, **{"task seconds": read_tasks})


def _zarr_setting(model, data, repeats, drop_caches):
    from daskglm.io import load_zarr

    load_before = os.getloadavg()[0]
    before = drop_page_cache if drop_caches else None
    cache = "page cache dropped" if drop_caches else "page cache kept"
    raw_seconds, (_, raw_nbytes), _ = _timed(lambda: raw_read(data.zarr), repeats, before)
    disk = raw_nbytes / statistics.median(raw_seconds)
    X = load_zarr(data.zarr)[0]
    read_seconds, read, read_tasks = _timed(lambda: _read_pass(X), repeats, before)
    seconds, clicks, tasks = _timed(lambda: _predict_pass(model, X), repeats, before)
    load = {"load before": load_before, "load after": os.getloadavg()[0]}
    limit = f"raw read of the store's files, {cache}"
    sizes = {"store GB": raw_nbytes / 1e9, "csr GB": read["csr bytes"] / 1e9}
    yield _line("zarr", "predict_proba(X)[:, 1].sum()", read["rows"], seconds, raw_nbytes,
                limit, disk, **load, **sizes,
                **{"expected clicks": clicks, "task seconds": tasks,
                   "GB/s of CSR made": read["csr bytes"] / statistics.median(seconds) / 1e9})
    yield _line("zarr", "read every chunk (no product)", read["rows"], read_seconds,
                raw_nbytes, limit, disk, **load, **sizes,
                **{"task seconds": read_tasks, "GB/s of CSR made":
                   read["csr bytes"] / statistics.median(read_seconds) / 1e9})
    yield _line("zarr", "raw read of the store's files", read["rows"], raw_seconds,
                raw_nbytes, limit, disk, **load)


def run(n=10_000_000, log2_d=20, partitions=None, settings=SETTINGS, repeats=3,
        drop_caches=False, compressor="default", directory=None, workers=2):
    """Generate the rows and time the settings; yield a dict per measurement."""
    from distributed import Client, LocalCluster

    unknown = set(settings) - set(SETTINGS)
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}; known: {SETTINGS}")
    if partitions is None:
        partitions = max(4, math.ceil(n / 1_000_000))
    model = known_model(log2_d)
    load_at_start = os.getloadavg()[0]
    with warnings.catch_warnings(), tempfile.TemporaryDirectory(dir=directory) as where, \
            LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) \
            as cluster, Client(cluster) as client:
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        needs = {"daskglm-zarr"} if "zarr" in settings else set()
        data = Data(n, log2_d, partitions, client, where, needs,
                    persist="memory" in settings, held_out=False, compressor=compressor)
        client.run(_warm_up, log2_d)
        yield {"setting": "data", "n": n, "log2_d": log2_d, "partitions": partitions,
               "workers": workers, "compressor": str(compressor),
               "seconds to generate and write": time.perf_counter() - start,
               "load at start": load_at_start, "load after": os.getloadavg()[0],
               "commit": _commit()}
        if "memory" in settings:
            yield from _memory_setting(client, model, data, repeats)
            client.cancel([data.X, data.y])
            data.X = data.y = None
        if "zarr" in settings:
            yield from _zarr_setting(model, data, repeats, drop_caches)


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=pathlib.Path(__file__).parent).stdout.strip()
    except OSError:
        return None


def markdown(lines):
    """The measurements as a markdown table."""
    head = ("| setting | what | rows | seconds | rows/s | GB/s of X read | limit measured "
            "| fraction of the limit |\n|---|---|---|---|---|---|---|---|")
    body = [f"| {m['setting']} | {m['what']} | {m['rows']:,} | {m['seconds']:.2f} | "
            f"{m['rows/s']:.3g} | {m['GB/s of X read']:.2f} | "
            f"{m['limit']}: {m['limit GB/s']:.2f} GB/s | {m['fraction of the limit']:.2f} |"
            for m in lines if m["setting"] != "data"]
    return "\n".join([head, *body])


def add_parser(commands):
    """The ``prediction`` sub-command."""
    parser = commands.add_parser(
        "prediction", help="predict_proba on hashed rows, in memory and from zarr, against "
                           "memory bandwidth and the disk's read speed")
    parser.add_argument("--n", type=float, default=10_000_000, help="rows (default 1e7)")
    parser.add_argument("--log2-d", type=int, default=20, help="log2 of the columns")
    parser.add_argument("--partitions", type=int, default=None,
                        help="row partitions, also the store's chunks (default: one per "
                             "1e6 rows, at least 4)")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help="memory, zarr or both (default)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes of each kind")
    parser.add_argument("--drop-caches", action="store_true",
                        help="drop the page cache before each pass over the store (root)")
    parser.add_argument("--compressor", choices=tuple(COMPRESSORS), default="default",
                        help="the store's compression: zarr's default (Zstandard), none, "
                             "or lz4 (Blosc's, a faster decoder)")
    parser.add_argument("--directory", default=None,
                        help="where the temporary store goes (default: the system's)")
    parser.add_argument("--json", action="store_true", help="one JSON line per measurement")
    parser.set_defaults(handler=main)


def main(args):
    """Print the measurements (the handler of ``prediction``)."""
    lines = []
    for line in run(int(args.n), args.log2_d, args.partitions, args.settings.split(","),
                    args.repeats, args.drop_caches, COMPRESSORS[args.compressor](),
                    args.directory):
        lines.append(line)
        if args.json:
            print(json.dumps(line), flush=True)
        else:
            print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in line.items()), flush=True)
    if not args.json:
        print(markdown(lines))
    return 0
