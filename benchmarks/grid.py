"""Thousands of models: a grid of ``C`` and ``l1_ratio`` on one persisted data set, fitted
by :func:`daskglm.fit_grid` (one validation, paths warm-started, rounds shared) against
one ``fit`` call per setting.

Both on one two-process ``distributed.LocalCluster``, the data persisted on the workers
before anything is timed.  Printed: seconds, rounds, passes over ``X`` in all and per
model (:func:`daskglm.comparison.passes_over_data`), the largest difference between a
grid model's coefficients and its separate fit's, and how many of each converged.

``python -m benchmarks grid [--rows 1e6] [--features 20] [--cs 10] [--l1-ratios 10]
[--kind dense|hashed] [--separate all|N]``: with ``--separate N`` only the first ``N``
settings are fitted one by one and their seconds, rounds and passes are scaled to the
grid (said so in the output).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["add_parser", "main"]


def add_parser(commands):
    """The ``grid`` sub-command."""
    parser = commands.add_parser(
        "grid", help="fit_grid (a grid of C and l1_ratio, reads shared) against one fit "
                     "per setting")
    parser.add_argument("--rows", type=float, default=1_000_000, help="rows (default 1e6)")
    parser.add_argument("--features", type=int, default=20, help="dense columns (default 20)")
    parser.add_argument("--kind", choices=("dense", "hashed"), default="dense",
                        help="dense Gaussian columns, or hashed click-through rows of 2^18 "
                             "columns (benchmarks.click_through)")
    parser.add_argument("--cs", type=int, default=10, help="values of C (default 10)")
    parser.add_argument("--l1-ratios", type=int, default=10,
                        help="values of l1_ratio, 0 included (default 10)")
    parser.add_argument("--separate", default="all",
                        help="how many settings to fit one by one (default all)")
    parser.add_argument("--partitions", type=int, default=8)
    parser.set_defaults(handler=main)


def _data(client, args):
    import dask.array as da
    from distributed import wait

    rows = int(args.rows)
    chunk = -(-rows // args.partitions)
    if args.kind == "dense":
        rng = da.random.default_rng(0)
        X = rng.standard_normal((rows, args.features), chunks=(chunk, args.features))
        coef = np.random.default_rng(1).normal(size=args.features) / np.sqrt(args.features)
        eta = X @ coef
        y = (rng.uniform(size=rows, chunks=chunk) < 1 / (1 + da.exp(-eta))).astype(float)
        description = f"dense {rows:,} x {args.features}"
    else:
        import dask
        import scipy.sparse as sp

        from benchmarks.click_through import click_rows

        sizes = [min(chunk, rows - i * chunk) for i in range(args.partitions)]
        parts = [dask.delayed(click_rows)(size, i, 18) for i, size in enumerate(sizes)]
        meta = sp.csr_matrix((0, 2**18))
        X = da.concatenate([da.from_delayed(part[0], (size, 2**18), dtype=float, meta=meta)
                            for part, size in zip(parts, sizes)])
        y = da.concatenate([da.from_delayed(part[1], (size,), dtype=float)
                            for part, size in zip(parts, sizes)])
        description = f"hashed click-through {rows:,} x 2^18"
    X, y = client.persist([X, y])
    wait([X, y])
    return X, y, description


def _settings(args):
    Cs = np.logspace(-3, 2, args.cs)
    l1_ratios = np.linspace(0.0, 1.0, args.l1_ratios) if args.l1_ratios > 1 else [0.0]
    return {"C": [float(c) for c in Cs], "l1_ratio": [float(r) for r in l1_ratios]}


def _passes(models):
    from daskglm.comparison import passes_over_data

    return sum(passes_over_data(model)[0] or 0.0 for model in models)


def main(args):
    """Print the comparison (the handler of ``grid``)."""
    from distributed import Client, LocalCluster
    from sklearn.base import clone
    from sklearn.model_selection import ParameterGrid

    import daskglm

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        X, y, description = _data(client, args)
        grid = _settings(args)
        settings = list(ParameterGrid(grid))
        estimator = daskglm.LogisticRegression(penalty="elasticnet")
        count = len(settings) if args.separate == "all" else min(int(args.separate),
                                                                  len(settings))
        print(f"{description}, {args.partitions} partitions, 2 workers of one thread; "
              f"{len(settings)} settings ({args.cs} C x {len(grid['l1_ratio'])} l1_ratio), "
              f"LogisticRegression(penalty='elasticnet') at its defaults; "
              f"{time.strftime('%Y-%m-%d')}\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = daskglm.fit_grid(estimator, grid, X, y)
            start = time.perf_counter()
            separate = [clone(estimator).set_params(**setting).fit(X, y)
                        for setting in settings[:count]]
            separate_seconds = time.perf_counter() - start
        scale = len(settings) / count
        grid_passes = _passes([fitted])
        separate_passes = _passes(separate) * scale
        separate_rounds = sum(model.comm_.rounds for model in separate) * scale
        both = [(a, b) for a, b in zip(fitted.models, separate)
                if a.converged_ and b.converged_]
        worst = max((float(np.max(np.abs(np.ravel(a.coef_) - np.ravel(b.coef_))))
                     for a, b in both), default=float("nan"))
        note = "" if count == len(settings) else f" (first {count}, scaled to {len(settings)})"
        print("| method | seconds | rounds | passes over X | per model | converged |")
        print("|---|---|---|---|---|---|")
        print(f"| fit_grid, {len(fitted.paths)} paths side by side | {fitted.seconds:.1f} | "
              f"{fitted.comm_.rounds} | {grid_passes:.0f} | "
              f"{grid_passes / len(settings):.2f} | "
              f"{sum(m.converged_ for m in fitted.models)}/{len(settings)} |")
        print(f"| one fit per setting{note} | {separate_seconds * scale:.1f} | "
              f"{separate_rounds:.0f} | {separate_passes:.0f} | "
              f"{separate_passes / len(settings):.2f} | "
              f"{sum(m.converged_ for m in separate)}/{count} |")
        print(f"\nfit_grid is {separate_seconds * scale / fitted.seconds:.1f}x as fast; largest "
              f"coefficient difference from the separate fits {worst:.2g} "
              f"(the {len(both)} settings that converged in both)")
    return 0
