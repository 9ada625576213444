"""What the scikit-learn parity options cost on a cluster: rounds, bytes and seconds.

Three measurements on one ``LocalCluster`` (two single-threaded worker processes), the
data persisted on the workers before anything is timed:

1. **Several targets**: ``Ridge`` on ``k`` targets with the normal equations (ONE Gram round
   for all) against ``k`` single-target fits, and against ``solver="lbfgs"`` (one fit per
   target).
2. **Non-negative coefficients**: ``LinearRegression`` with and without ``positive=True``
   (the same single round), and ``Lasso(positive=True)`` by L-BFGS-B and proximal gradient.
3. **One-vs-rest SGD**: ``SGDClassifier(loss="hinge")`` on two classes and on ``c`` (one
   binary fit per class, so about ``c`` times the rounds).

``python -m benchmarks parity [--rows 200000] [--features 20] [--targets 4] [--classes 4]``
(about a minute on two idle cores at the defaults; ``--rows 2000000 --features 50`` for the
published numbers).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["main"]


def _timed(make, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(X, y)
    return model, time.perf_counter() - start


def _row(label, model, seconds):
    report = model.comm_
    print(f"| {label} | {model.solver_} | {report.rounds} | {report.bytes_modelled:,} | "
          f"{seconds:.2f} |", flush=True)


def main(args):
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import daskglm

    rows, d, k, c = args.rows, args.features, args.targets, args.classes
    chunk = -(-rows // args.partitions)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        rng = da.random.default_rng(0)
        X = rng.standard_normal((rows, d), chunks=(chunk, d))
        coef = rng.standard_normal((d, k), chunks=(d, k))
        Y = X @ coef + rng.standard_normal((rows, k), chunks=(chunk, k))
        labels = da.floor(da.clip(X[:, 0] + X[:, 1] + 0.5 * rng.standard_normal(rows, chunks=chunk),
                                  -c / 2 + 0.5, c / 2 - 0.5) + c / 2).astype(int)
        X, Y, labels = X.persist(), Y.persist(), labels.persist()
        wait([X, Y, labels])
        _timed(lambda: daskglm.Ridge(alpha=1.0), X, Y)  # the workers' first imports, not timed
        print(f"{rows} x {d} in {args.partitions} partitions, {k} targets, {c} classes\n")
        print("| fit | solver | rounds | bytes (modelled) | seconds |")
        print("|---|---|---|---|---|")
        multi, seconds = _timed(lambda: daskglm.Ridge(alpha=1.0), X, Y)
        _row(f"Ridge, {k} targets at once", multi, seconds)
        total = 0.0
        for j in range(k):
            single, seconds = _timed(lambda: daskglm.Ridge(alpha=1.0), X, Y[:, j])
            total += seconds
        _row(f"Ridge, one target (x {k}: {total:.2f} s)", single, seconds)
        multi, seconds = _timed(lambda: daskglm.Ridge(alpha=1.0, solver="lbfgs", tol=1e-8), X, Y)
        _row(f"Ridge lbfgs, {k} targets in turn", multi, seconds)
        for positive in (False, True):
            model, seconds = _timed(lambda p=positive: daskglm.LinearRegression(positive=p), X,
                                    Y[:, 0])
            _row(f"LinearRegression positive={positive}", model, seconds)
        for solver in ("lbfgs", "proximal"):
            model, seconds = _timed(lambda s=solver: daskglm.Lasso(alpha=0.01, positive=True,
                                                                   solver=s, tol=1e-6), X, Y[:, 0])
            _row("Lasso positive=True", model, seconds)
        sgd = {"loss": "hinge", "batch_size": 10_000, "sync_every": 10, "max_iter": 3,
               "tol": None, "random_state": 0}
        model, seconds = _timed(lambda: daskglm.SGDClassifier(**sgd), X, labels > c // 2 - 1)
        _row("SGDClassifier hinge, 2 classes", model, seconds)
        model, seconds = _timed(lambda: daskglm.SGDClassifier(**sgd), X, labels)
        _row(f"SGDClassifier hinge, {c} classes (one-vs-rest)", model, seconds)
    print(f"\n{time.strftime('%Y-%m-%d')}; numpy {np.__version__}")
    return 0
