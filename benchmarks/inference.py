"""What ``inference=True`` costs: the inference round against the fit's own rounds.

On a fresh ``distributed.LocalCluster`` of separate worker processes, a Poisson model with
an exposure is fitted by Newton's method with ``inference=True`` on a persisted Dask array.
The ledger of the fit gives the seconds and bytes of each round: the table compares the
one ``inference`` round (expected and observed information, sandwich meat, deviances, from
one read of ``X``) with the median ``hessian`` round of the fit (the same read, one
matrix), and the ``target_mean`` and ``null_model`` rounds (no read of ``X``).

``python -m benchmarks inference [--rows 200000] [--features 20] [--partitions 8]``
(about a minute on two cores); the larger run of the documentation:
``python -m benchmarks inference --rows 4000000 --features 50``.
"""

from __future__ import annotations

import statistics
import warnings

__all__ = ["main"]


def measure(rows=200_000, features=20, partitions=8, workers=2):
    """``{kind: (rounds, median seconds, bytes returned per round)}`` of one fit."""
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import daskglm

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        chunk = -(-rows // partitions)
        rng = da.random.default_rng(0)
        X = rng.standard_normal((rows, features), chunks=(chunk, features)) / features**0.5
        exposure = rng.uniform(0.5, 2.0, rows, chunks=chunk)
        y = rng.poisson(exposure * da.exp(X.sum(axis=1) * 0.3)).astype(float)
        X, exposure, y = (a.persist() for a in (X, exposure, y))
        wait([X, exposure, y])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = daskglm.PoissonRegressor(alpha=0, solver="newton", tol=1e-8,
                                             inference=True)
            model.fit(X, y, exposure=exposure)  # warms the workers up
            model.fit(X, y, exposure=exposure)
    table = {}
    for record in model.comm_.records:
        table.setdefault(record.kind, []).append(record)
    return {kind: (len(records), statistics.median(r.seconds for r in records),
                   records[0].bytes_returned)
            for kind, records in table.items()}


def main(args):
    results = measure(args.rows, args.features, args.partitions, args.workers)
    print(f"Poisson with exposure, {args.rows} rows x {args.features} features, "
          f"{args.partitions} partitions, {args.workers} workers (second fit)")
    print("| round | count | median seconds | bytes returned |")
    print("|---|---|---|---|")
    for kind, (count, seconds, returned) in results.items():
        print(f"| {kind} | {count} | {seconds:.4f} | {returned} |")
    return 0
