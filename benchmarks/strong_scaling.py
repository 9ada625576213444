"""Strong scaling on this machine, for any user: the same fits on 1, 2, ..., N workers.

``python -m benchmarks scaling --workers 1,2,4,8,16 [--rows 10000000] [--features 50]``

For each worker count a fresh ``distributed.LocalCluster`` of single-threaded worker
processes is started, one after the other, and the same synthetic data set
(``daskglm.datasets``, chunk by chunk from a fixed seed, so every cluster holds the same
rows) is made and persisted on it before anything is timed.  Each method is fitted once
to warm up and then ``--repeats`` times; the table gives the median, the speed-up
``T(1st count) / T(w)``, the parallel efficiency ``speed-up * first count / w``, and the
rounds and bytes of the fit's ledger.  Run it on the machine whose cores you want to
measure: with more workers than cores the extra workers only share them.
"""

from __future__ import annotations

import statistics
import time
import warnings

__all__ = ["main", "METHODS"]

#: Method label -> (estimator class name, estimator parameters, synthetic data kind).
METHODS = {
    "lbfgs": ("LogisticRegression", {"solver": "lbfgs"}, "classification"),
    "newton": ("LogisticRegression", {"solver": "newton"}, "classification"),
    "averaging": ("LogisticRegression",
                  {"solver": "averaging", "solver_options": {"correction": "newton"}},
                  "classification"),
    "normal": ("LinearRegression", {"solver": "normal"}, "regression"),
}


def _fit_times(client, method, rows, features, partitions, repeats, tol):
    from distributed import wait

    import daskglm
    from daskglm import datasets

    class_name, params, kind = METHODS[method]
    make = {"classification": datasets.make_classification,
            "regression": datasets.make_regression}[kind]
    X, y, _ = make(rows, features, chunks=-(-rows // partitions), random_state=0)
    X, y = client.persist([X, y])
    wait([X, y])
    estimator = getattr(daskglm, class_name)(tol=tol, **params)
    times, model = [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, y)  # warm-up: the workers' imports and first allocations
        for _ in range(repeats):
            start = time.perf_counter()
            model = estimator.fit(X, y)
            times.append(time.perf_counter() - start)
    report = model.comm_
    return {"median_s": statistics.median(times), "rounds": report.rounds,
            "bytes": report.bytes_measured if report.bytes_measured is not None
            else report.bytes_modelled}


def main(args):
    """Time each method on each worker count and print a markdown table."""
    from distributed import Client, LocalCluster

    counts = sorted({int(w) for w in str(args.workers).split(",") if w.strip()})
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if not counts or min(counts) < 1 or unknown:
        raise SystemExit(f"--workers needs positive integers and --methods names among "
                         f"{sorted(METHODS)}; got {args.workers!r}, {unknown or methods}")
    partitions = args.partitions or max(counts) * 2
    results = {}
    for workers in counts:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            for method in methods:
                results[method, workers] = _fit_times(client, method, args.rows, args.features,
                                                      partitions, args.repeats, args.tol)
                print(f"{method} on {workers} worker(s): "
                      f"{results[method, workers]['median_s']:.3f} s", flush=True)
    print()
    print(f"Strong scaling: {args.rows} x {args.features} float64, {partitions} partitions, "
          f"tol={args.tol:g}, median of {args.repeats} fits after a warm-up, each worker "
          f"count on a fresh LocalCluster of single-threaded worker processes.")
    print()
    print("| method | workers | median s | speed-up | efficiency | rounds | bytes |")
    print("|---|---|---|---|---|---|---|")
    first = counts[0]
    for method in methods:
        base = results[method, first]["median_s"]
        for workers in counts:
            row = results[method, workers]
            speedup = base / row["median_s"]
            print(f"| {method} | {workers} | {row['median_s']:.3f} | {speedup:.2f} | "
                  f"{speedup * first / workers:.2f} | {row['rounds']} | {row['bytes']:,} |")
    return 0
