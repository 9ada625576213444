"""The ``daskglm`` command: ``demo``, ``compare``, ``fit`` and ``make-data``.

An error is one line on stderr and exit status 2 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from .datasets import KINDS

__all__ = ["main", "CommandError"]

#: Seconds ``fit --scheduler`` waits to reach the scheduler (``--connect-timeout``).
CONNECT_SECONDS = 10.0


class CommandError(Exception):
    """A mistake in the command's arguments or data, said in one line."""

#: The synthetic data set of each family.
_KIND_OF_FAMILY = {"binomial": "classification", "gaussian": "regression", "poisson": "poisson"}


def _local_cluster(args):
    """A LocalCluster of ``args.workers`` single-threaded worker processes, each warmed by
    :mod:`daskglm.preload` as it starts."""
    from distributed import LocalCluster

    from .preload import PRELOAD

    return LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
        preload=[PRELOAD],
    )


def _synthetic_persisted(args):
    make = KINDS[_KIND_OF_FAMILY[args.family]]
    X, y, _ = make(args.n, args.d, chunks=max(1, -(-args.n // args.partitions)), random_state=0)
    return X.persist(), y.persist()


def make_data(args):
    """Write a synthetic data set to a zarr store, chunk by chunk, and describe it."""
    X, _, _ = KINDS[args.kind](args.n, args.d, chunks=args.chunks, random_state=args.seed,
                               path=args.path, density=args.density)
    layout = "dense" if args.density is None else f"sparse CSR, density {args.density:g}"
    print(
        f"wrote {args.kind} data set to {args.path}: {X.shape[0]} rows x {X.shape[1]} "
        f"features ({layout}), {X.numblocks[0]} chunks of up to {max(X.chunks[0])} rows"
    )
    return 0


def demo(args):
    """Fit one synthetic problem with every method on a LocalCluster and print a table."""
    import time

    from distributed import Client

    from .comparison import compare

    started = time.perf_counter()
    if args.plot:
        _check_matplotlib()  # before any cluster starts
    with _local_cluster(args) as cluster, Client(cluster):
        X, y = _synthetic_persisted(args)
        n_test = int(round(DEMO_TEST_SIZE * args.n))
        print(
            f"daskglm demo: {args.family} family, L2 alpha={args.alpha:g}, every method at its "
            f"defaults;\nn={args.n:,} rows ({args.n - n_test:,} to train, the last {n_test:,} "
            f"held out), d={args.d}, {args.partitions} partitions, {args.workers} worker "
            "processes",
            flush=True,
        )
        result = compare(X, y, list(DEMO_METHODS), family=args.family, penalty="l2",
                         alpha=args.alpha, test_size=DEMO_TEST_SIZE, at_defaults=True,
                         warm_up="fits")
        print(f"one-time set-up, not in the seconds below: {result.warm_up_seconds:.1f} s: every "
              "worker compiles (first run)\nor loads the compiled loops of every method, in "
              "a fit of each on a few rows of each partition\n")
        print(result.table(DEMO_COLUMNS))
        chosen = _choices_made(result)
        if chosen:
            print("\n" + "\n".join(textwrap.wrap(
                f"chosen during the fits (from timings, so they vary): {chosen}", LEGEND_WIDTH)))
        print()
        print(demo_legend(args.family, args.n - n_test))
        if args.plot:
            result.plot(args.plot, against=("seconds", "bytes"))
            print(f"\nplot written to {args.plot}")
    print(f"\ndemo wall time: {time.perf_counter() - started:.1f} s (cluster start, data, "
          "set-up, fits, objectives, scores)")
    return 0


#: Every method the demo fits, in the order of its table (every ``solver=`` value).
DEMO_METHODS = ("auto", "normal", "newton", "lbfgs", "gd", "proximal", "admm", "averaging",
                "sgd", "async", "gossip")

#: Share of the rows the demo holds out for the score: the last ones.
DEMO_TEST_SIZE = 0.2

#: Characters per line of the demo's legend.
LEGEND_WIDTH = 92

#: The columns ``daskglm demo`` shows.
DEMO_COLUMNS = ("method", "rounds", "passes", "bytes measured", "seconds", "objective gap",
                "held-out score")

_SCORE_OF_FAMILY = {"binomial": "accuracy", "gaussian": "R^2",
                    "poisson": "D^2 (share of the null deviance explained)"}

#: The per-row loss of each family, as the estimators define it (``eta`` the linear
#: predictor, ``mu`` the mean).
_LOSS_OF_FAMILY = {"binomial": "log-loss -[y*log(mu) + (1-y)*log(1-mu)]",
                   "gaussian": "half squared error (y-eta)^2/2",
                   "poisson": "Poisson negative log-likelihood mu - y*log(mu)"}


def demo_legend(family, n_train):
    """What each column of the demo's table means, one entry per column."""
    entries = {
        "method": 'the solver= value; "auto (newton)": the solver that solver="auto" chose.',
        "rounds": "rounds of communication: the records of the fit's ledger "
                  "(est.comm_.rounds), each one map over the partitions followed by a "
                  "reduction or a gather, except async's pushes to and pulls from its "
                  "parameter holder: one record each, however many there were.",
        "passes": f"passes over the {n_train:,} training rows: 1 for each round that reads "
                  "every row (validation, gradient, Hessian, Gram); 1 per epoch for sgd, async and "
                  "gossip (an epoch reads every row once; sgd adds the share of an epoch its "
                  'timing rounds read); ">=" for admm and averaging: a lower bound, as their '
                  "local solves read a partition's rows once per L-BFGS-B evaluation and only "
                  "the iterations of the longest one are recorded (counted 1 + those per "
                  "round).",
        "bytes measured": "bytes Dask moved for the fit's rounds, from its own counters: "
                          "client to scheduler, scheduler to workers and client, worker to "
                          'worker and to the client; "+ N modelled": rounds those counters '
                          "do not see (async's pushes to and pulls from its parameter "
                          "holder), by the byte model.",
        "seconds": "wall time of the fit alone, after the set-up above (the objective and "
                   "the held-out score are computed apart).",
        "objective gap": "the method's training objective minus the lowest objective any "
                         "method reached (0: the best), the objective being the mean "
                         f"{_LOSS_OF_FAMILY[family]} over the training rows "
                         "+ alpha/2 * |coef|^2 (intercept not penalised), as the estimators "
                         "define it, evaluated for every method the same way after the fits.",
        "held-out score": f"{_SCORE_OF_FAMILY[family]} on the last {DEMO_TEST_SIZE:.0%} of the "
                          "rows, not trained on.",
        "n/a": "the method does not apply to this family and penalty; why.",
    }
    width = max(len(name) for name in entries)
    lines = []
    for name, text in entries.items():
        wrapped = textwrap.wrap(text, LEGEND_WIDTH - width - 2)
        lines.append(f"{name.ljust(width)}  {wrapped[0]}")
        lines += [" " * (width + 2) + line for line in wrapped[1:]]
    lines += textwrap.wrap("sgd, async and gossip draw their rows at random (no random_state "
                           "at the defaults), and size their rounds from timings: their rows "
                           "vary from run to run.", LEGEND_WIDTH)
    return "\n".join(lines)


def _choices_made(result):
    """The options the fits chose as they ran (``comm_.choices``), e.g. ``"sgd
    sync_every=10000; gossip local_steps=5000"``."""
    parts = []
    for row in result.rows:
        choices = getattr(row.report, "choices", None) or {}
        if row.ok and choices:
            options = ", ".join(f"{option}={value}" for option, (value, _) in choices.items())
            parts.append(f"{row.method} {options}")
    return "; ".join(parts)


def _check_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CommandError('--plot needs matplotlib: pip install matplotlib '
                           '(or pip install "daskglm[plot]")') from None


def _open_data(args):
    """``(X, y, sample_weight)`` of a zarr store or of parquet files, as lazy Dask arrays
    (read from the store's metadata only: no cluster needed)."""
    path = args.zarr or args.parquet
    if not os.path.exists(path):
        raise CommandError(f"no such {'store' if args.zarr else 'file or directory'}: {path}")
    if args.zarr:
        from .io import load_zarr

        return load_zarr(args.zarr)
    try:
        import dask.dataframe as dd
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CommandError(f"reading parquet needs dask[dataframe] and pyarrow: {exc}") from None
    from .estimators.validation import frame_as_array

    frame = dd.read_parquet(args.parquet)
    for option, column in (("--target", args.target), ("--weight", args.weight)):
        if column is not None and column not in frame.columns:
            raise CommandError(f"{option} {column!r} is not a column of {args.parquet}; "
                               f"columns: {list(frame.columns)}")
    features = (args.features.split(",") if args.features
                else [c for c in frame.columns if c not in (args.target, args.weight)])
    missing = [c for c in features if c not in frame.columns]
    if missing:
        raise CommandError(f"--features {missing} are not columns of {args.parquet}; "
                           f"columns: {list(frame.columns)}")
    X = frame_as_array(frame[features])
    y = frame_as_array(frame[args.target])
    weight = frame_as_array(frame[args.weight]) if args.weight else None
    return X, y, weight


def fit_command(args):
    """Fit a GLM to a zarr store or parquet files on a cluster; save the model and ledger."""
    import json
    import pickle

    from distributed import Client

    from .estimators import GLM

    if bool(args.zarr) == bool(args.parquet):
        raise CommandError("give exactly one of --zarr PATH and --parquet PATH")
    if args.parquet and not args.target:
        raise CommandError("--parquet needs --target COLUMN")
    model = GLM(family=args.family, penalty=args.penalty, alpha=args.alpha,
                l1_ratio=args.l1_ratio, solver=args.solver, tol=args.tol,
                max_iter=args.max_iter, cache=args.cache)
    model._check_params()  # a bad option fails before any connection
    X, y, weight = _open_data(args)  # a missing store or column too
    if args.scheduler:
        try:
            client_context = Client(args.scheduler, timeout=args.connect_timeout)
        except (OSError, TimeoutError) as exc:
            raise CommandError(f"cannot reach the Dask scheduler at {args.scheduler} within "
                               f"{args.connect_timeout:g} s ({type(exc).__name__})") from exc
    else:
        client_context = Client(_local_cluster(args))
    with client_context as client:
        print(f"daskglm fit: {X.shape[0]} rows x {X.shape[1]} features, {args.family} family, "
              f"{args.penalty} alpha={args.alpha}, on {client.scheduler.address}")
        model.fit(X, y, sample_weight=weight)
        if not args.scheduler:
            client.cluster.close()
    report = model.comm_
    import numpy as np

    n_iter = int(np.max(model.n_iter_))  # LogisticRegression's is an array of shape (1,)
    print(f"solver {model.solver_}: converged={model.converged_} after {n_iter} "
          f"iterations, {report.rounds} rounds, {report.bytes_measured or report.bytes_modelled} "
          f"bytes, {report.seconds:.2f} s in rounds")
    with open(args.output, "wb") as file:
        pickle.dump(model, file)
    ledger_path = args.ledger or f"{args.output}.ledger.json"
    with open(ledger_path, "w") as file:
        json.dump(report.to_dict(), file, indent=1, default=float)
    print(f"model written to {args.output} (pickle), ledger to {ledger_path}")
    return 0


def compare_command(args):
    """Fit a synthetic data set with the chosen methods on a LocalCluster; print the table."""
    from distributed import Client

    from .accounting.costmodel import Cluster
    from .comparison import compare

    methods = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else None
    if args.project:
        Cluster.parse(args.project, base=Cluster(1))  # a bad specification fails early
    with _local_cluster(args) as cluster, Client(cluster):
        X, y = _synthetic_persisted(args)
        print(
            f"daskglm compare: {args.family} family, {args.penalty} alpha={args.alpha}, "
            f"n={args.n}, d={args.d}, {args.partitions} partitions, {args.workers} worker processes"
        )
        result = compare(X, y, methods, family=args.family, penalty=args.penalty,
                         alpha=args.alpha, tol=args.tol, max_iter=args.max_iter,
                         test_size=args.test_size)
        print(result.table())
        if args.project:
            print()
            print(result.project(args.project))
        if args.plot:
            result.plot(args.plot)
            print(f"\nplot written to {args.plot}")
    return 0


def main(argv=None):
    """Entry point of the ``daskglm`` command."""
    parser = argparse.ArgumentParser(prog="daskglm", description=__doc__)
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line")
    debug = argparse.ArgumentParser(add_help=False)  # --debug after the command too
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of an error instead of one line")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser(
        "demo", parents=[debug],
        help="fit a synthetic data set with every method, at its defaults, on a LocalCluster"
    )
    demo_parser.add_argument("--n", type=int, default=200_000, help="rows")
    demo_parser.add_argument("--d", type=int, default=20, help="features")
    demo_parser.add_argument("--family", default="binomial", choices=["binomial", "gaussian", "poisson"])
    demo_parser.add_argument("--alpha", type=float, default=1e-4, help="L2 strength (mean-loss scale)")
    demo_parser.add_argument("--partitions", type=int, default=8)
    demo_parser.add_argument("--workers", type=int, default=2)
    demo_parser.add_argument("--plot", metavar="PATH", default=None,
                             help="save the objective gap against seconds and against "
                                  "measured bytes to PATH, e.g. demo.png (needs matplotlib)")
    demo_parser.set_defaults(run=demo)

    compare_parser = commands.add_parser(
        "compare", parents=[debug],
        help="fit a synthetic data set with chosen methods on a LocalCluster and compare costs",
    )
    compare_parser.add_argument("--n", type=int, default=200_000, help="rows")
    compare_parser.add_argument("--d", type=int, default=20, help="features")
    compare_parser.add_argument(
        "--family", default="binomial", choices=["binomial", "gaussian", "poisson"]
    )
    compare_parser.add_argument(
        "--penalty", default="l2", choices=["l2", "l1", "elasticnet", "none"]
    )
    compare_parser.add_argument("--alpha", type=float, default=1e-4,
                                help="penalty strength (mean-loss scale)")
    compare_parser.add_argument("--partitions", type=int, default=8)
    compare_parser.add_argument("--workers", type=int, default=2)
    compare_parser.add_argument("--methods", default=None,
                                help="comma-separated solver names (default: all)")
    compare_parser.add_argument("--tol", type=float, default=1e-8)
    compare_parser.add_argument("--max-iter", type=int, default=500)
    compare_parser.add_argument("--test-size", type=float, default=0.2,
                                help="fraction of the rows held out for the score")
    compare_parser.add_argument("--plot", metavar="FILE.png", default=None,
                                help="save objective gap vs bytes, rounds and seconds "
                                     "(needs matplotlib)")
    compare_parser.add_argument(
        "--project", metavar="SPEC", default=None,
        help="predict each method's time on another cluster, e.g. "
             "workers=64,bandwidth=1e9,latency=1e-3 (see daskglm.accounting.costmodel)",
    )
    compare_parser.set_defaults(run=compare_command)

    fit_parser = commands.add_parser(
        "fit", parents=[debug],
        help="fit a GLM to a zarr store or parquet files and save the model and ledger"
    )
    source = fit_parser.add_argument_group("data (one of)")
    source.add_argument("--zarr", metavar="PATH", help="a store in daskglm's layout (see make-data)")
    source.add_argument("--parquet", metavar="PATH", help="parquet file(s), read with dask.dataframe")
    fit_parser.add_argument("--target", help="parquet: the target column")
    fit_parser.add_argument("--features", help="parquet: comma-separated feature columns "
                                               "(default: every other column)")
    fit_parser.add_argument("--weight", help="parquet: the sample-weight column")
    fit_parser.add_argument("--family", default="binomial", choices=["binomial", "gaussian", "poisson"])
    fit_parser.add_argument("--penalty", default="l2", choices=["l2", "l1", "elasticnet", "none"])
    fit_parser.add_argument("--alpha", type=float, default=1e-4,
                            help="penalty strength (mean-loss scale)")
    fit_parser.add_argument("--l1-ratio", type=float, default=0.5)
    fit_parser.add_argument("--solver", default="auto")
    fit_parser.add_argument("--tol", type=float, default=1e-6)
    fit_parser.add_argument("--max-iter", type=int, default=500)
    fit_parser.add_argument("--cache", default="auto", choices=["auto", "memory", "none"])
    fit_parser.add_argument("--scheduler", metavar="ADDRESS",
                            help="a running Dask scheduler (default: a LocalCluster)")
    fit_parser.add_argument("--connect-timeout", type=float, default=CONNECT_SECONDS,
                            help="seconds to reach --scheduler")
    fit_parser.add_argument("--workers", type=int, default=2,
                            help="worker processes of the LocalCluster")
    fit_parser.add_argument("--output", default="model.pkl", help="where to pickle the model")
    fit_parser.add_argument("--ledger", default=None,
                            help="where to write the ledger as JSON (default: OUTPUT.ledger.json)")
    fit_parser.set_defaults(run=fit_command)

    data_parser = commands.add_parser(
        "make-data", parents=[debug],
        help="write a synthetic data set to a zarr store (see daskglm.io)"
    )
    data_parser.add_argument("--kind", default="classification", choices=sorted(KINDS))
    data_parser.add_argument("--n", type=int, default=100_000, help="rows")
    data_parser.add_argument("--d", type=int, default=20, help="features")
    data_parser.add_argument("--chunks", type=int, default=None,
                             help="rows per chunk (default: about 32 MiB per chunk)")
    data_parser.add_argument("--density", type=float, default=None,
                             help="fraction of non-zero features per row: sparse X (default: dense)")
    data_parser.add_argument("--seed", type=int, default=0, help="random seed")
    data_parser.add_argument("--path", required=True, help="directory of the zarr store to write")
    data_parser.set_defaults(run=make_data)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except Exception as exc:  # one line, unless asked for the traceback
        if args.debug:
            raise
        kind = "" if isinstance(exc, CommandError) else f"{type(exc).__name__}: "
        print(f"daskglm {args.command}: error: {kind}{exc}".splitlines()[0], file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
