"""First fit against second fit on a fresh cluster: what a cold worker pays before its first task.

Each repeat starts a new ``distributed.LocalCluster`` of separate worker processes, makes
the data on it (persisted before anything is timed), then times one ``fit`` and the same
``fit`` again; the estimator class is imported before either.  The first pays for what
the workers import and load to run the first task; the second runs warm.  Each repeat
measures two clusters, one after the other: one started plainly, and one whose workers
start with ``preload=["daskglm.preload"]`` (:mod:`daskglm.preload`: the loading done in
the background as each worker starts, while the data are made).  The target of the
roadmap is a ratio of at most 1.2.

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
                  dashboard_address=None, preload={preload}) as cluster, Client(cluster) as client:
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


def measure(workers=2, rows=1_000_000, features=50, partitions=8, preload=False):
    """``(first fit seconds, second fit seconds)`` of one fresh cluster, its workers started
    with :mod:`daskglm.preload` when ``preload``."""
    script = _SCRIPT.format(workers=workers, rows=rows, features=features,
                            chunk=-(-rows // partitions),
                            preload=["daskglm.preload"] if preload else None)
    output = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                            text=True).stdout
    first, second = (float(v) for v in output.split()[-2:])
    return first, second


_WORKERS_STARTED = {False: "plainly", True: "with daskglm.preload"}


def main(args):
    ratios = {False: [], True: []}
    print("| repeat | workers started | first fit s | second fit s | first / second |")
    print("|---|---|---|---|---|")
    for repeat in range(1, args.repeats + 1):
        for preload in (False, True):
            first, second = measure(args.workers, args.rows, args.features, args.partitions,
                                    preload)
            ratios[preload].append(first / second)
            print(f"| {repeat} | {_WORKERS_STARTED[preload]} | {first:.3f} | {second:.3f} | "
                  f"{first / second:.2f} |", flush=True)
    print()
    for preload, values in ratios.items():
        median = statistics.median(values)
        verdict = "meets" if median <= 1.2 else "misses"
        print(f"workers started {_WORKERS_STARTED[preload]}: median first / second "
              f"{median:.2f} ({verdict} the target of 1.2)")
    print(f"{args.workers} workers, {args.rows} x {args.features} in {args.partitions} "
          f"partitions, L2-logistic, lbfgs; {time.strftime('%Y-%m-%d')}")
    return 0
