"""The fused gradient loops on one partition, single-threaded, against one read of it.

``python -m benchmarks fused-kernel [--rows 500000] [--features 50] [--dtype float64]
[--repeats 9]`` times, on one C-contiguous partition in this process with BLAS and numba
limited to one thread:

* one read of ``X``: ``X @ v`` (BLAS) and ``X.sum()``;
* for each family with a compiled loss (Gaussian, binomial, Poisson) the gradient loop of
  :mod:`daskglm.compute.fused_loops` (``rows_in_chunks``: predictors, then the family's
  formula vectorised over a chunk of rows, then the products) and its Hessian loop
  (``hessian_rows``, without the symmetric product BLAS adds).

Every entry is timed once per round, rounds interleaved so that a change of the machine's
load touches all entries alike; the table gives the median of the rounds and its ratio to
``X @ v`` in the same run, with the load average before and after.  Each is timed twice
over: wall-clock and the thread's CPU time (``time.thread_time``), which leaves out the
time the thread waits for a core on a machine busier than its cores (it still counts the
slower reads when other processes share the memory bus).  A few seconds.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

__all__ = ["main", "add_parser"]


def _entries(X, y, coef):
    from daskglm.compute import fused_loops, loss_codes

    none = np.empty(0)
    read_coef = coef.astype(X.dtype)  # a float64 vector would make numpy convert X
    entries = {"read: X @ v": lambda: X @ read_coef, "read: X.sum()": X.sum}
    names = {loss_codes.GAUSSIAN: "gaussian", loss_codes.BINOMIAL: "binomial",
             loss_codes.POISSON: "poisson"}
    scaled = np.empty_like(X)
    for family, name in names.items():
        entries[f"{name}, gradient"] = (
            lambda family=family: fused_loops.rows_in_chunks(
                X, y[family], none, none, coef, 0.1, family, 0.0, np.zeros(X.shape[1])))
        entries[f"{name}, gradient and curvatures"] = (
            lambda family=family: fused_loops.hessian_rows(
                X, y[family], none, none, coef, 0.1, family, 0.0, np.zeros(X.shape[1]),
                np.zeros(X.shape[1]), scaled))
    return entries


def main(args):
    """Time the entries and print a markdown table; returns 0."""
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)
    rng = np.random.default_rng(0)
    n, d = args.rows, args.features
    X = np.ascontiguousarray(rng.normal(size=(n, d)).astype(args.dtype))
    coef = rng.normal(scale=1.5 / np.sqrt(d), size=d)
    eta = X @ coef
    y = {0: eta + rng.normal(size=n), 1: (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))) * 1.0,
         2: rng.poisson(np.exp(np.minimum(eta, 5.0))) * 1.0}
    entries = _entries(X, y, coef)
    with threadpool_limits(limits=1):
        for function in entries.values():
            function()  # compile or load, and warm the caches
        load_before = os.getloadavg()
        wall = {name: [] for name in entries}
        cpu = {name: [] for name in entries}
        for _ in range(args.repeats):
            for name, function in entries.items():
                start, start_cpu = time.perf_counter(), time.thread_time()
                function()
                cpu[name].append(time.thread_time() - start_cpu)
                wall[name].append(time.perf_counter() - start)
        load_after = os.getloadavg()
    wall = {name: statistics.median(values) for name, values in wall.items()}
    cpu = {name: statistics.median(values) for name, values in cpu.items()}
    print(f"One {n} x {d} {args.dtype} partition ({X.nbytes / 1e6:.0f} MB), one thread, "
          f"median of {args.repeats} interleaved rounds; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after.\n")
    print("| entry | wall ms | / X @ v | CPU ms | / X @ v |\n|---|---|---|---|---|")
    read = "read: X @ v"
    for name in entries:
        print(f"| {name} | {wall[name] * 1e3:.2f} | {wall[name] / wall[read]:.2f} "
              f"| {cpu[name] * 1e3:.2f} | {cpu[name] / cpu[read]:.2f} |")
    return 0


def add_parser(commands):
    """Register ``fused-kernel`` on ``commands`` (argparse sub-parsers)."""
    parser = commands.add_parser("fused-kernel",
                                 help="the fused gradient loops against one read, one thread")
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    parser.add_argument("--repeats", type=int, default=9)
    parser.set_defaults(handler=main)
