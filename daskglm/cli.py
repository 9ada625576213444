"""The ``daskglm`` command."""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

__all__ = ["main", "synthetic"]


def synthetic(n_samples, n_features, family="binomial", chunks=None, random_state=0):
    """A synthetic GLM data set as Dask arrays ``(X, y, coef)``, generated chunk by chunk.

    Rows are standard normal features; the target follows ``family`` with true
    coefficients drawn once from ``random_state``.
    """
    import dask.array as da

    chunks = chunks or max(1, n_samples // 8)
    rng = np.random.default_rng(random_state)
    coef = rng.normal(scale=1.0 / np.sqrt(n_features), size=n_features)
    state = da.random.RandomState(random_state)
    X = state.standard_normal((n_samples, n_features), chunks=(chunks, n_features))
    eta = X @ coef + 0.5
    if family == "binomial":
        y = (state.uniform(size=n_samples, chunks=chunks) < 1 / (1 + da.exp(-eta))).astype(float)
    elif family == "poisson":
        y = state.poisson(da.exp(0.5 * eta)).astype(float)
    elif family == "gaussian":
        y = eta + state.standard_normal(n_samples, chunks=chunks)
    else:
        raise ValueError(f"Unknown family {family!r}.")
    return X, y, coef


def demo(args):
    """Fit one synthetic problem with every solver on a LocalCluster and print a table."""
    from distributed import Client, LocalCluster

    from .estimators import GLM
    from .solvers import SOLVERS

    with LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, Client(cluster):
        X, y, _ = synthetic(args.n, args.d, args.family, chunks=args.n // args.partitions)
        X, y = X.persist(), y.persist()
        split = int(0.8 * args.n)
        X_train, y_train, X_test, y_test = X[:split], y[:split], X[split:], y[split:]
        print(
            f"daskglm demo: {args.family} family, L2 alpha={args.alpha}, n={args.n}, d={args.d}, "
            f"{args.partitions} partitions, {args.workers} worker processes"
        )
        rows = []
        for name in SOLVERS:
            model = GLM(args.family, "l2", args.alpha, solver=name, tol=1e-8, max_iter=500)
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X_train, y_train)
            except ValueError as exc:
                rows.append((name, "-", "-", "-", "-", f"n/a: {str(exc).split(';')[0]}"))
                continue
            seconds = time.perf_counter() - start
            rows.append(
                (
                    name,
                    model.n_iter_,
                    model.comm_.rounds,
                    f"{seconds:.2f}",
                    f"{model.history_[-1]['objective']:.8f}",
                    f"{model.score(X_test, y_test):.4f}",
                )
            )
        header = ("method", "iterations", "rounds", "seconds", "objective", "held-out score")
        _print_table(header, rows)
    return 0


def _print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(str(h).ljust(w) for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))


def main(argv=None):
    """Entry point of the ``daskglm`` command."""
    parser = argparse.ArgumentParser(prog="daskglm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser(
        "demo", help="fit a synthetic data set with every method on a LocalCluster"
    )
    demo_parser.add_argument("--n", type=int, default=200_000, help="rows")
    demo_parser.add_argument("--d", type=int, default=20, help="features")
    demo_parser.add_argument("--family", default="binomial", choices=["binomial", "gaussian", "poisson"])
    demo_parser.add_argument("--alpha", type=float, default=1e-4, help="L2 strength (mean-loss scale)")
    demo_parser.add_argument("--partitions", type=int, default=8)
    demo_parser.add_argument("--workers", type=int, default=2)
    demo_parser.set_defaults(run=demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
