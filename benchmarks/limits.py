"""The machine's limits, measured on the in-memory copy of a data set.

* memory bandwidth: one read of ``X`` (``X.sum()``), in bytes per second, on one thread
  and on as many threads as the cluster has (each thread summing its share of the rows at
  the same time: numpy's ``sum`` runs on one thread whatever the thread limit);
* BLAS rate: ``X.T @ X`` (``2 n d^2`` floating-point operations, of which BLAS computes
  about half for the symmetric product, so this is the rate a Gram round can reach);
* the matrix-vector product ``X @ v``, the kernel of a gradient round.

Each is the median of several repeats after a warm-up.  A distributed round over ``X``
cannot be faster than one read of ``X`` by the cluster's cores, so the report divides
each daskglm method's time per round by the one-read time (:func:`one_read_seconds`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.timing import measure

__all__ = ["measure_limits", "one_read_seconds", "read_in_shares"]


def _median_seconds(function, repeats=5):
    function()  # warm-up
    return measure(function, repeats)[0].median


def read_in_shares(X, threads):
    """A function that reads ``X`` once with ``threads`` threads at a time, each summing
    a contiguous share of the rows (the way ``threads`` workers read their partitions)."""
    if threads <= 1:
        return lambda: X.sum()
    bounds = np.linspace(0, X.shape[0], threads + 1).astype(int)
    shares = [X[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]
    pool = ThreadPoolExecutor(threads)
    return lambda: sum(pool.map(np.sum, shares))


def measure_limits(data, threads, log=print):
    """Measure memory bandwidth, BLAS rate and ``X @ v`` on ``data``'s in-memory ``X``.

    Parameters
    ----------
    data : benchmarks.data.Data
        Dense.
    threads : int
        The cluster's cores: the "all threads" measurements use this many.
    log : callable

    Returns
    -------
    dict
        The data set, and per thread count: ``read_s``, ``read_bytes_per_s``,
        ``matvec_s``, ``gram_s``, ``gram_flops_per_s``.
    """
    X = data.X_local
    n, d = X.shape
    v = np.ones(d)
    rows = {}
    for count in sorted({1, threads}):
        with threadpool_limits(limits=count):
            read = _median_seconds(read_in_shares(X, count))
            matvec = _median_seconds(lambda: X @ v)
            gram = _median_seconds(lambda: X.T @ X, repeats=3)
        rows[str(count)] = {
            "threads": count,
            "read_s": read,
            "read_bytes_per_s": X.nbytes / read,
            "matvec_s": matvec,
            "gram_s": gram,
            "gram_flops_per_s": 2.0 * n * d * d / gram,
        }
        log(f"limits on {count} thread(s): read {X.nbytes / read / 1e9:.1f} GB/s, "
            f"X.T@X {2.0 * n * d * d / gram / 1e9:.1f} GFLOP/s")
    return {"data": data.spec.to_dict(), "threads": threads, "by_threads": rows,
            "definition": "read: X.sum(), on several threads each summing its share of "
                          "the rows at once; gram: X.T @ X counted as 2 n d^2 flops; "
                          "medians of repeats after a warm-up"}


def one_read_seconds(limits, X_bytes):
    """Seconds one read of ``X_bytes`` takes at the bandwidth the cluster's cores reached.

    Returns
    -------
    float or None
    """
    if not limits:
        return None
    row = limits["by_threads"].get(str(limits["threads"]))
    return None if row is None else X_bytes / row["read_bytes_per_s"]
