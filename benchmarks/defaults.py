"""Every method at its defaults on a two-worker cluster: wall time, rounds and accuracy
against L-BFGS in the same run.

A new user's first fit passes nothing but ``solver=``.  This fits L2-logistic
regression (``C=1``) with every solver that handles it, and least squares with the
normal equations against L-BFGS on the same rows, on a fresh ``LocalCluster`` of worker
processes (one thread each) holding ``rows x features`` of Dask data in ``partitions``
chunks, and prints each method's seconds, rounds, iterations, whether it converged, the
accuracy on the training rows (R^2 for least squares) and its time over L-BFGS's.  The target is
every method within 10x of L-BFGS and within 0.01 of its accuracy.  Each solver first
fits a tenth of a partition (untimed), so that one-time costs are not in the table.

``python -m benchmarks defaults [--rows 1000000] [--features 20] [--partitions 8]
[--workers 2] [--solvers sgd,async,...]``
"""

from __future__ import annotations

import time
import warnings

__all__ = ["add_parser", "main", "LOGISTIC_SOLVERS"]

#: The solvers fitted to the logistic model (``"normal"`` is least squares only).
LOGISTIC_SOLVERS = ("lbfgs", "newton", "gd", "proximal", "admm", "averaging", "sgd",
                    "async", "gossip", "auto")


def make_data(rows, features, partitions, seed=0):
    """Persisted Dask arrays: ``X``, a binary and a continuous target."""
    import dask.array as da
    import numpy as np

    chunk = -(-rows // partitions)
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, features), chunks=(chunk, features))
    coef = np.linspace(-1.0, 1.0, features)
    eta = X @ coef + 0.5
    y_binary = (eta + rng.logistic(size=rows, chunks=chunk) > 0).astype(float)
    y_linear = eta + rng.standard_normal(rows, chunks=chunk)
    return X.persist(), y_binary.persist(), y_linear.persist()


def fit_at_defaults(estimator, X, y):
    """``(fitted estimator, seconds, ConvergenceWarning messages)``."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(X, y)
    seconds = time.perf_counter() - start
    return estimator, seconds, [str(w.message) for w in caught
                                if w.category.__name__ == "ConvergenceWarning"]


def rows_of(name, model, seconds, score, base_seconds, base_score):
    n_iter = model.n_iter_
    n_iter = int(n_iter[0]) if hasattr(n_iter, "__len__") else int(n_iter)
    chosen = "; ".join(f"{option}={value}" for option, (value, _) in model.comm_.choices.items())
    return (f"| {name} | {seconds:.2f} | {seconds / base_seconds:.1f} | {model.comm_.rounds} | "
            f"{n_iter} | {model.converged_} | {score:.4f} | {score - base_score:+.4f} | "
            f"{chosen or '-'} |")


def main(args):
    import daskglm
    from benchmarks.cluster import ClusterSpec, local_cluster
    from benchmarks.environment import load_text

    solvers = args.solvers.split(",") if args.solvers else list(LOGISTIC_SOLVERS)
    solvers = ["lbfgs"] + [name for name in solvers if name != "lbfgs"]  # the yardstick first
    with local_cluster(ClusterSpec(args.workers, 1)):
        X, y, y_linear = make_data(args.rows, args.features, args.partitions)
        print(f"L2-logistic (C=1) at defaults, {args.rows:,} x {args.features} in "
              f"{args.partitions} partitions, {args.workers} one-thread workers; "
              f"load {load_text()}")
        print("\n| solver | seconds | / lbfgs | rounds | iterations | converged | accuracy | "
              "- lbfgs | chosen |")
        print("|---|---|---|---|---|---|---|---|---|")
        # one small fit of each first, so that no method's one-time costs (compiled
        # loops loaded on the workers) are timed
        for name in solvers:
            fit_at_defaults(daskglm.LogisticRegression(solver=name, max_iter=2),
                            X[: X.chunks[0][0] // 10], y[: X.chunks[0][0] // 10])
        base = None
        for name in solvers:
            # L-BFGS, the yardstick, at the best of three fits; every other method once
            fits = [fit_at_defaults(daskglm.LogisticRegression(solver=name), X, y)
                    for _ in range(3 if base is None else 1)]
            model, seconds, _ = min(fits, key=lambda fit: fit[1])
            score = float(model.score(X, y))
            if base is None:
                base = seconds, score
            print(rows_of(name, model, seconds, score, *base), flush=True)
        linear = [fit_at_defaults(daskglm.LinearRegression(solver=name), X, y_linear)
                  for name in ("lbfgs", "normal")]
        scores = [float(model.score(X, y_linear)) for model, _, _ in linear]
        print("\nLeast squares on the same rows (R^2):\n")
        print("| solver | seconds | / lbfgs | rounds | iterations | converged | R^2 | "
              "- lbfgs | chosen |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, (model, seconds, _), score in zip(("lbfgs", "normal"), linear, scores):
            print(rows_of(name, model, seconds, score, linear[0][1], scores[0]))
        print(f"\nload after the run: {load_text()}; "
              f"{time.strftime('%Y-%m-%d %H:%M')}")
    return 0


def add_parser(commands):
    """The ``defaults`` sub-command."""
    parser = commands.add_parser("defaults", help="every method at its defaults against lbfgs")
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--solvers", default=None,
                        help=f"comma-separated (default: {','.join(LOGISTIC_SOLVERS)})")
    parser.set_defaults(handler=lambda args: main(_rows_int(args)))
    return parser


def _rows_int(args):
    args.rows = int(args.rows)
    return args
