"""First fit against second fit on a fresh cluster: what a cold worker pays before its first task.

Each repeat starts a new ``distributed.LocalCluster`` of separate worker processes, makes
the data on it (persisted before anything is timed), then times one ``fit`` and the same
``fit`` again; the estimator class is imported before either.  The first pays for what
the workers import to run the first task; the second runs warm.  The
target of the roadmap is a ratio of at most 1.2.

``python -m benchmarks cold-start [--workers 2] [--rows 1000000] [--features 50]``
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

__all__ = ["main"]

#: One measurement, in a fresh interpreter so that the driver starts cold too.
_SCRIPT = """
import time, warnings
from distributed import Client, LocalCluster, wait
import dask.array as da

with LocalCluster(n_workers={workers}, threads_per_worker=1, processes=True,
                  dashboard_address=None) as cluster, Client(cluster) as client:
    rng = da.random.default_rng(0)
    X = rng.standard_normal(({rows}, {features}), chunks=({chunk}, {features})).persist()
    y = (X[:, 0] + rng.standard_normal({rows}, chunks={chunk}) > 0).astype(float).persist()
    wait([X, y])  # the data exist on the workers before anything is timed
    from daskglm import LogisticRegression  # the driver's own imports are not the question
    times = []
    for _ in range(2):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            LogisticRegression(solver="lbfgs").fit(X, y)
        times.append(time.perf_counter() - start)
    print(times[0], times[1])
"""


def measure(workers=2, rows=1_000_000, features=50, partitions=8):
    """``(first fit seconds, second fit seconds)`` of one fresh cluster."""
    script = _SCRIPT.format(workers=workers, rows=rows, features=features,
                            chunk=-(-rows // partitions))
    output = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                            text=True).stdout
    first, second = (float(v) for v in output.split()[-2:])
    return first, second


def main(args):
    ratios = []
    print("| repeat | first fit s | second fit s | first / second |")
    print("|---|---|---|---|")
    for repeat in range(1, args.repeats + 1):
        first, second = measure(args.workers, args.rows, args.features, args.partitions)
        ratios.append(first / second)
        print(f"| {repeat} | {first:.3f} | {second:.3f} | {first / second:.2f} |", flush=True)
    median = statistics.median(ratios)
    verdict = "meets" if median <= 1.2 else "misses"
    print(f"\nmedian first / second: {median:.2f} ({verdict} the target of 1.2); "
          f"{args.workers} workers, {args.rows} x {args.features} in {args.partitions} "
          f"partitions, L2-logistic, lbfgs; {time.strftime('%Y-%m-%d')}")
    return 0
